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


def test_every_clean_json_scenario_is_held_to_one_and_a_half_floor_plus_parse() -> None:
    from bench.cost import parse_rows

    rows = parse_rows(Figures(_rows()))
    # small · json and history · json at c10 (streamed and broken scenarios are not held to it)
    assert [r[0] for r in rows] == [
        "CPU µs/req, small · json · c10",
        "CPU µs/req, history · json · c10",
    ]
    assert rows[0][1] == "700 (1.75 x)"
    assert rows[0][4] == "FAIL"
    passing = [dict(r, cpu_us=550) if r["target"] == "guard" else r for r in _rows()]
    assert {r[4] for r in parse_rows(Figures(passing))} == {"PASS"}


def test_the_sessions_ratio_is_reported_when_measured() -> None:
    from bench.cost import sessions_rows

    assert sessions_rows({}) == []
    (row,) = sessions_rows({"ratio": 1.6, "turns": 30})
    assert row[1:] == ("1.60", "-", "", "")  # reported; the goal is the growth run's


def test_the_growth_run_is_a_target_when_measured() -> None:
    from bench.cost import growth_rows

    assert growth_rows({}) == []
    figures = {"ratio": 1.4, "turns": 60, "log_ratio": 0.96, "last_record_complete": True}
    cpu, log = growth_rows({"toolcall-guard": figures})
    assert cpu[1:] == ("1.40", "-", "≤ 1.5", "PASS")
    assert log[-1] == "PASS"
    (_, log) = growth_rows({"toolcall-guard": {**figures, "last_record_complete": False}})
    assert log[-1] == "FAIL"
