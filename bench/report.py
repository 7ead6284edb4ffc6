"""Figures out of the raw rows of a run: medians over rounds, added latency, ratios to the floor,
the targets with pass/fail, and the markdown of ``bench/results/latest.md``."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from bench.phases import CHAT_BODIES, SCENARIOS, Scenario

#: Issue 17's "Done when": mean added p50 (c1) ≤ 1.3x the floor's, geometric-mean req/s at c10
#: ≥ 0.75x the floor's, over the four chat scenarios.
LATENCY_GOAL = 1.3
THROUGHPUT_GOAL = 0.75

PROXIES = ("floor", "guard")
NAMES = {
    "direct": "direct",
    "floor": "floor",
    "parse": "floor + parse",
    "base": "toolcall-guard before",
    "guard": "toolcall-guard",
    "otel": "toolcall-guard, tracing on",
}


def _median(values: Iterable[float]) -> float:
    values = list(values)
    return statistics.median(values) if values else float("nan")


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Figures:
    """Medians over rounds of the load rows, per scenario and target."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in rows:
            self.cells.setdefault((row["scenario"], row["target"]), []).append(row)
        self.targets = list(dict.fromkeys(row["target"] for row in rows))

    def measured(self, scenario: str) -> bool:
        return any(name == scenario for name, _ in self.cells)

    def get(self, scenario: str, target: str, key: str) -> float:
        return _median(r[key] for r in self.cells.get((scenario, target), []))

    def total(self, scenario: str, target: str, key: str) -> int:
        return sum(r[key] for r in self.cells.get((scenario, target), []))

    def added(self, scenario: str, target: str, key: str) -> float:
        """Median over rounds of (target - direct) measured in the same round."""
        direct = {r["round"]: r[key] for r in self.cells.get((scenario, "direct"), [])}
        rows = self.cells.get((scenario, target), [])
        return _median(r[key] - direct[r["round"]] for r in rows if r["round"] in direct)


class Pacing:
    """Time to first chunk and gaps between events, pooled over rounds, per body and target."""

    def __init__(self, rows: list[dict[str, Any]], pace_ms: float) -> None:
        self.pace = pace_ms
        self.rows = rows

    def _of(self, kind: str, target: str) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["kind"] == kind and r["target"] == target]

    def ttfc(self, kind: str, target: str) -> float:
        return _median(r["ttfc_ms"] for r in self._of(kind, target))

    def gaps(self, kind: str, target: str) -> list[float]:
        return [g for r in self._of(kind, target) for g in r["gaps_ms"]]

    def deviation(self, kind: str, target: str, p: float) -> float:
        return _pct([abs(g - self.pace) for g in self.gaps(kind, target)], p)

    def complete(self, kind: str, target: str, chunks: int) -> str:
        rows = self._of(kind, target)
        return f"{sum(r['events'] == chunks and r['status'] == 200 for r in rows)}/{len(rows)}"


def _ms(value: float, signed: bool = False) -> str:
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def mib(value: float) -> str:
    return f"{value / 2**20:.1f}"


def _goal_rows(fig: Figures) -> list[tuple[str, ...]]:
    """Added p50 at c1 and req/s at c10 per chat scenario, then the two aggregates."""
    out: list[tuple[str, ...]] = []
    for kind, stream in CHAT_BODIES:
        name = Scenario(kind, stream, 1).name
        g, f = fig.added(name, "guard", "p50_ms"), fig.added(name, "floor", "p50_ms")
        goal = f"≤ {LATENCY_GOAL} x floor = {LATENCY_GOAL * f:.2f}"
        out.append(
            (
                f"added p50 ms, {name}",
                _ms(g, True),
                _ms(f, True),
                goal,
                verdict(g <= LATENCY_GOAL * f),
            )
        )
    for kind, stream in CHAT_BODIES:
        name = Scenario(kind, stream, 10).name
        g, f = fig.get(name, "guard", "rps"), fig.get(name, "floor", "rps")
        goal = f"≥ {THROUGHPUT_GOAL} x floor = {THROUGHPUT_GOAL * f:.0f}"
        out.append(
            (f"req/s, {name}", f"{g:.0f}", f"{f:.0f}", goal, verdict(g >= THROUGHPUT_GOAL * f))
        )
    lat, rps = aggregates(fig)
    out.append(
        (
            "mean added p50 (4 chat scenarios, c1), ms",
            f"{lat[0]:+.2f} ({lat[0] / lat[1]:.2f} x)",
            f"{lat[1]:+.2f}",
            f"≤ {LATENCY_GOAL} x floor",
            verdict(lat[0] <= LATENCY_GOAL * lat[1]),
        )
    )
    out.append(
        (
            "geometric-mean req/s (4 chat scenarios, c10)",
            f"{rps[0]:.0f} ({rps[0] / rps[1]:.2f} x)",
            f"{rps[1]:.0f}",
            f"≥ {THROUGHPUT_GOAL} x floor",
            verdict(rps[0] >= THROUGHPUT_GOAL * rps[1]),
        )
    )
    return out


def aggregates(fig: Figures) -> tuple[tuple[float, float], tuple[float, float]]:
    """((guard, floor) mean added p50 at c1, (guard, floor) geometric-mean req/s at c10) over
    the four chat scenarios."""
    c1 = [Scenario(k, s, 1).name for k, s in CHAT_BODIES]
    c10 = [Scenario(k, s, 10).name for k, s in CHAT_BODIES]
    lat = tuple(statistics.fmean(fig.added(n, t, "p50_ms") for n in c1) for t in PROXIES)
    rps = tuple(geomean(fig.get(n, t, "rps") for n in c10) for t in PROXIES)
    return (lat[1], lat[0]), (rps[1], rps[0])


def geomean(values: Iterable[float]) -> float:
    values = list(values)
    if not values or any(not v > 0 for v in values):
        return float("nan")
    return math.exp(statistics.fmean(math.log(v) for v in values))


def check_rows(
    fig: Figures,
    pacing: Pacing,
    leaks: dict[str, Any],
) -> list[tuple[str, ...]]:
    """The targets of the issues: (what, toolcall-guard, floor, goal, PASS/FAIL)."""
    if "guard" not in fig.targets:
        return []
    out = _goal_rows(fig)
    for kind in ("small", "history"):
        direct = pacing.ttfc(kind, "direct")
        g, f = pacing.ttfc(kind, "guard") - direct, pacing.ttfc(kind, "floor") - direct
        out.append(
            (
                f"added time to first chunk ms, {kind}",
                _ms(g, True),
                _ms(f, True),
                "≤ 1 ms",
                verdict(g <= 1.0),
            )
        )
    for kind in ("small", "history"):
        out.append(_pacing_row(pacing, kind))
    if "guard" in leaks:
        out.append(_leak_row(leaks))
    return out


def _pacing_row(pacing: Pacing, kind: str) -> tuple[str, ...]:
    med = {t: _median(pacing.gaps(kind, t)) for t in ("direct", "floor", "guard")}
    dev = {t: pacing.deviation(kind, t, 99) for t in ("direct", "floor", "guard")}
    ok = abs(med["guard"] - pacing.pace) <= 2 and dev["guard"] <= dev["direct"] + 2
    return (
        f"chunk gaps ms (p50, p99 \\|gap - {pacing.pace:g}\\|), {kind}",
        f"{med['guard']:.2f}, {dev['guard']:.2f}",
        f"{med['floor']:.2f}, {dev['floor']:.2f}",
        f"p50 within 2 of {pacing.pace:g}; p99 dev ≤ direct's ({dev['direct']:.2f}) + 2",
        verdict(ok),
    )


def _leak_row(leaks: dict[str, Any]) -> tuple[str, ...]:
    def change(target: str) -> tuple[str, float]:
        (_, rss1), (_, rss2) = leaks[target]["checkpoint"], leaks[target]["final"]
        delta = (rss2 - rss1) / rss1 * 100
        return f"{mib(rss1)} → {mib(rss2)} MiB ({delta:+.1f} %)", delta

    guard, delta = change("guard")
    floor = change("floor")[0] if "floor" in leaks else "-"
    n1, n2 = leaks["guard"]["checkpoint"][0], leaks["guard"]["final"][0]
    return (
        f"RSS after {n1:,} → {n2:,} requests",
        guard,
        floor,
        "± 10 %",
        verdict(abs(delta) <= 10),
    )


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def table(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def summary(
    fig: Figures,
    pacing: Pacing,
    leaks: dict[str, Any],
    extra: list[tuple[str, ...]] | None = None,
) -> str:
    """The targets table (what the README shows); ``extra``: more rows (the tracing's, the
    agent sessions', the growth run's)."""
    header = ("target", "toolcall-guard", "floor", "goal", "result")
    return table(header, check_rows(fig, pacing, leaks) + (extra or []))


def latency_table(fig: Figures) -> str:
    """Concurrency 1: p50/p99 per target, added over direct, ratio to the floor, CPU/request."""
    header = ["scenario"] + [f"{NAMES[t]} p50 / p99" for t in fig.targets]
    header += [f"{NAMES[t]} added p50 / p99" for t in fig.targets if t != "direct"]
    header += ["guard ÷ floor (added p50)"] if "guard" in fig.targets else []
    header += [f"{NAMES[t]} CPU µs/req" for t in fig.targets]
    rows = []
    for s in (s for s in SCENARIOS if s.concurrency == 1 and fig.measured(s.name)):
        n = s.name
        row = [n] + [
            f"{_ms(fig.get(n, t, 'p50_ms'))} / {_ms(fig.get(n, t, 'p99_ms'))}" for t in fig.targets
        ]
        row += [
            f"{_ms(fig.added(n, t, 'p50_ms'), True)} / {_ms(fig.added(n, t, 'p99_ms'), True)}"
            for t in fig.targets
            if t != "direct"
        ]
        if "guard" in fig.targets:
            row.append(f"{fig.added(n, 'guard', 'p50_ms') / fig.added(n, 'floor', 'p50_ms'):.2f}")
        row += [f"{fig.get(n, t, 'cpu_us'):.0f}" for t in fig.targets]
        rows.append(tuple(row))
    return table(tuple(header), rows)


def throughput_table(fig: Figures) -> str:
    """Concurrency 10 and 32: requests/s, p50/p99, ratio to the floor, CPU per request, errors."""
    header = ["scenario"] + [f"{NAMES[t]} req/s" for t in fig.targets]
    header += ["guard ÷ floor"] if "guard" in fig.targets else []
    header += [f"{NAMES[t]} p50 / p99" for t in fig.targets]
    header += [f"{NAMES[t]} CPU µs/req" for t in fig.targets] + ["errors / non-2xx"]
    rows = []
    for s in (s for s in SCENARIOS if s.concurrency != 1 and fig.measured(s.name)):
        n = s.name
        row = [n] + [f"{fig.get(n, t, 'rps'):.0f}" for t in fig.targets]
        if "guard" in fig.targets:
            row.append(f"{fig.get(n, 'guard', 'rps') / fig.get(n, 'floor', 'rps'):.2f}")
        row += [
            f"{_ms(fig.get(n, t, 'p50_ms'))} / {_ms(fig.get(n, t, 'p99_ms'))}" for t in fig.targets
        ]
        row += [f"{fig.get(n, t, 'cpu_us'):.0f}" for t in fig.targets]
        errors = sum(fig.total(n, t, "errors") for t in fig.targets)
        non2xx = sum(fig.total(n, t, "non2xx") for t in fig.targets)
        rows.append((*row, f"{errors} / {non2xx}"))
    return table(tuple(header), rows)


def pacing_table(pacing: Pacing, targets: list[str], chunks: int) -> str:
    """Paced streams: time to first chunk, added over direct, gaps, completeness."""
    header = (
        "body",
        "target",
        "TTFC p50 ms",
        "added",
        "gap p50 ms",
        "gap p1 / p99 ms",
        "\\|gap - pace\\| p99 / max ms",
        "complete",
    )
    rows = []
    for kind in ("small", "history"):
        direct = pacing.ttfc(kind, "direct")
        for t in targets:
            gaps = pacing.gaps(kind, t)
            rows.append(
                (
                    kind,
                    NAMES[t],
                    _ms(pacing.ttfc(kind, t)),
                    _ms(pacing.ttfc(kind, t) - direct, True),
                    _ms(_median(gaps)),
                    f"{_ms(_pct(gaps, 1))} / {_ms(_pct(gaps, 99))}",
                    f"{_ms(pacing.deviation(kind, t, 99))} / {_ms(pacing.deviation(kind, t, 100))}",
                    pacing.complete(kind, t, chunks),
                )
            )
    return table(header, rows)
