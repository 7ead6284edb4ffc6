"""Issue 34's targets in the results' table: CPU per request against "floor + parse" on every
clean scenario, and what a conversation broken at its start costs against a clean one (the
agent sessions, bench/sessions.py, and one 60-turn conversation through ``serve``,
bench/growth.py)."""

from __future__ import annotations

import math
from typing import Any

from bench.phases import BROKEN, SCENARIOS
from bench.report import Figures, verdict

#: Issue 34's "Done when": CPU µs per request within 1.5x "floor + parse" on every clean
#: scenario (the limit of any proxy that must read the body once), and a conversation broken
#: at its start costing at most 1.5x a clean one in CPU time.
PARSE_GOAL = 1.5
BROKEN_GOAL = 1.5


def parse_rows(fig: Figures) -> list[tuple[str, ...]]:
    """CPU µs per request of toolcall-guard against "floor + parse" at c10, per clean scenario
    measured (JSON answers: the streamed ones add the same relay to both)."""
    out: list[tuple[str, ...]] = []
    for scenario in SCENARIOS:
        if scenario.concurrency != 10 or scenario.stream or scenario in BROKEN:
            continue
        g, p = (fig.get(scenario.name, t, "cpu_us") for t in ("guard", "parse"))
        if math.isnan(g) or math.isnan(p):
            continue
        goal = f"≤ {PARSE_GOAL} x floor + parse = {PARSE_GOAL * p:.0f}"
        ratio = f"{g:.0f} ({g / p:.2f} x)"
        name = f"CPU µs/req, {scenario.name}"
        out.append((name, ratio, f"{p:.0f} (floor + parse)", goal, verdict(g <= PARSE_GOAL * p)))
    return out


def sessions_rows(figures: dict[str, Any]) -> list[tuple[str, ...]]:
    """Broken ÷ clean CPU time of the agent sessions (bench/sessions.py), when measured:
    reported beside the goal's run (:func:`growth_rows`), eight conversations at once."""
    if not figures:
        return []
    ratio = figures["ratio"]
    turns = figures["turns"]
    return [(f"CPU broken ÷ clean, agent sessions ({turns} turns)", f"{ratio:.2f}", "-", "", "")]


def growth_rows(figures: dict[str, dict[str, Any]]) -> list[tuple[str, ...]]:
    """The 60-turn conversation through ``serve`` (bench/growth.py): broken ÷ clean CPU time,
    the log against the final body, the last record complete; of the tree measured (the first)."""
    if not figures:
        return []
    found = next(iter(figures.values()))
    turns, ratio, log = found["turns"], found["ratio"], found["log_ratio"]
    return [
        (
            f"CPU broken ÷ clean, one {turns}-turn conversation through serve",
            f"{ratio:.2f}",
            "-",
            f"≤ {BROKEN_GOAL}",
            verdict(ratio <= BROKEN_GOAL),
        ),
        (
            f"repair log ÷ final body, that conversation (last record complete: "
            f"{found['last_record_complete']})",
            f"{log:.2f}",
            "-",
            "≤ 3, complete",
            verdict(log <= 3 and bool(found["last_record_complete"])),
        ),
    ]
