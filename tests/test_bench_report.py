"""The benchmark's ceiling table: floor + parse and toolcall-guard against the floor."""

from __future__ import annotations

from bench.phases import CHAT_BODIES, Scenario
from bench.report import Figures
from bench.tables import ceiling_table


def _rows() -> list[dict[str, object]]:
    rows = []
    for kind, stream in CHAT_BODIES:
        name = Scenario(kind, stream, 10).name
        for target, rps, cpu in (
            ("floor", 1000.0, 300.0),
            ("parse", 800.0, 400.0),
            ("guard", 500, 700),
        ):
            rows.append({"round": 0, "scenario": name, "target": target, "rps": rps, "cpu_us": cpu})
    return rows


def test_the_ceiling_table_gives_each_ratio_and_their_geometric_mean() -> None:
    lines = ceiling_table(Figures(_rows())).splitlines()
    assert len(lines) == 2 + len(CHAT_BODIES) + 1
    first = lines[2]
    assert (
        first == "| small · json · c10 | 1000 | 800 (0.80) | 500 (0.50) | 300 / 400 / 700 | 25 % |"
    )
    assert lines[-1].startswith("| geometric mean, 4 chat scenarios | 1.00 | 0.80 | 0.50 |")


def test_without_every_chat_scenario_there_is_no_mean() -> None:
    rows = [r for r in _rows() if str(r["scenario"]).startswith("small")]
    lines = ceiling_table(Figures(rows)).splitlines()
    assert not any("geometric mean" in line for line in lines)
