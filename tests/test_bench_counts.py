"""The instruction-count table of ``make bench`` (bench/clean_counts.py): each scenario's
ratio to floor + parse, and tracing on to off."""

from __future__ import annotations

from bench.clean_counts import KINDS, table


def test_the_counts_table_gives_the_two_ratios_of_each_scenario() -> None:
    figures = {
        kind: {"floor + parse": 500_000.0, "toolcall-guard": 900_000.0, "tracing on": 990_000.0}
        for kind in KINDS
    }
    lines = table(figures).splitlines()
    assert len(lines) == 2 + len(KINDS)
    assert lines[2] == "| small · json | 500 | 900 | 1.80 | 990 | 1.10 |"


def test_without_tracing_the_table_has_no_tracing_columns() -> None:
    lines = table({"small": {"floor + parse": 400_000.0, "toolcall-guard": 600_000.0}})
    assert lines.splitlines()[2] == "| small · json | 400 | 600 | 1.50 |"
    assert "tracing" not in lines
