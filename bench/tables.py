"""The per-scenario tables of ``bench/results/latest.md`` (req/s and CPU per request at each
concurrency, before/after with ``--baseline``) and the memory tables."""

from __future__ import annotations

from typing import Any

from bench.phases import BROKEN, CHAT_BODIES, CONCURRENCIES, SCENARIOS, Scenario
from bench.report import NAMES, Figures, geomean, mib, table

#: The issue's four chat scenarios, without their concurrency.
CHAT_NAMES = frozenset(Scenario(kind, stream, 1).body for kind, stream in CHAT_BODIES)


def bodies_of(fig: Figures) -> list[str]:
    """The scenarios measured, without their concurrency, in the order of SCENARIOS."""
    seen = {s.body for s in SCENARIOS if fig.measured(s.name)}
    return list(dict.fromkeys(s.body for s in SCENARIOS if s.body in seen))


def rate_table(fig: Figures) -> str:
    """Per scenario: req/s of floor and toolcall-guard at each concurrency, with the ratio."""
    header = ["scenario"]
    header += [f"c{c} req/s floor / guard (÷)" for c in CONCURRENCIES]
    rows = []
    for body in bodies_of(fig):
        row = [body]
        for c in CONCURRENCIES:
            n = f"{body} · c{c}"
            g, f = fig.get(n, "guard", "rps"), fig.get(n, "floor", "rps")
            row.append(f"{f:.0f} / {g:.0f} ({g / f:.2f})")
        rows.append(tuple(row))
    return table(tuple(header), rows)


def cpu_table(fig: Figures) -> str:
    """Per scenario: the server's CPU µs per request at each concurrency, each target, and what
    toolcall-guard spends over the floor."""
    header = ["scenario"]
    header += [
        f"c{c} CPU µs/req " + " / ".join(NAMES[t] for t in fig.targets) for c in CONCURRENCIES
    ]
    header += ["guard - floor µs/req (c1, c10, c32)"]
    rows = []
    for body in bodies_of(fig):
        row = [body]
        extra = []
        for c in CONCURRENCIES:
            n = f"{body} · c{c}"
            row.append(" / ".join(f"{fig.get(n, t, 'cpu_us'):.0f}" for t in fig.targets))
            extra.append(f"{fig.get(n, 'guard', 'cpu_us') - fig.get(n, 'floor', 'cpu_us'):+.0f}")
        rows.append((*row, ", ".join(extra)))
    return table(tuple(header), rows)


def before_after_table(fig: Figures) -> str:
    """With ``--baseline``: the server's CPU µs per request of toolcall-guard before and after,
    measured interleaved in the same run, and req/s at c10."""
    header = ["scenario"]
    header += [f"c{c} CPU µs/req before → after" for c in CONCURRENCIES]
    header += ["c10 req/s before → after"]
    rows = []
    for body in bodies_of(fig):
        row = [body]
        for c in CONCURRENCIES:
            n = f"{body} · c{c}"
            b, a = fig.get(n, "base", "cpu_us"), fig.get(n, "guard", "cpu_us")
            row.append(f"{b:.0f} → {a:.0f} ({(a - b) / b * 100:+.0f} %)")
        n = f"{body} · c10"
        row.append(f"{fig.get(n, 'base', 'rps'):.0f} → {fig.get(n, 'guard', 'rps'):.0f}")
        rows.append(tuple(row))
    return table(tuple(header), rows)


def memory_tables(out: dict[str, Any], streams: int, fig: Figures) -> str:
    """RSS of each proxy: with many open streams, over the bench run, along the leak check."""
    held = {r["target"]: r for r in out["held"]}
    open_rows = []
    for t, h in held.items():
        per = (h["rss_peak_during"] - h["rss_before"]) / max(h["opened"], 1) / 1024
        open_rows.append(
            (
                NAMES[t],
                f"{mib(h['rss_before'])} → {mib(h['rss_open'])} → {mib(h['rss_after'])}",
                mib(h["rss_peak_during"]),
                f"{per:.1f}",
                f"{h['opened']} / {h['completed']}",
                f"{h['open_seconds']:.1f}",
            )
        )
    header = (
        "proxy",
        "RSS MiB idle → all open → all closed",
        "peak MiB",
        "KiB per stream",
        "opened / completed",
        "all open after s",
    )
    run_rows = []
    for t, peak in out["peaks"].items():
        rss, peak_after = out["after_broken"].get(t, (0, 0))
        records = sum(fig.total(s.name, t, "requests") for s in BROKEN) if t == "guard" else 0
        leak = out["leaks"].get(t)
        series = ", ".join(f"{mib(r)} @ {n:,}" for n, r in _thin(leak["series"])) if leak else "-"
        run_rows.append(
            (
                NAMES[t],
                mib(peak),
                f"{mib(rss)} (peak {mib(peak_after)})",
                f"{records:,}" if t == "guard" else "-",
                series,
                mib(leak["peak"]) if leak else "-",
            )
        )
    header2 = (
        "proxy",
        "peak RSS MiB, clean scenarios + open streams",
        "RSS MiB after the broken scenarios",
        "repair records written (repaired requests)",
        "leak check (fresh process): RSS MiB @ requests",
        "leak check peak MiB",
    )
    return "\n\n".join(
        [
            f"{streams:,} streams open at once (small body, paced upstream):",
            table(header, open_rows),
            "RSS over the run:",
            table(header2, run_rows),
        ]
    )


def _thin(series: list[tuple[int, int]], keep: int = 8) -> list[tuple[int, int]]:
    if len(series) <= keep:
        return series
    step = (len(series) - 1) / (keep - 1)
    return [series[round(i * step)] for i in range(keep)]


def ceiling_table(fig: Figures) -> str:
    """At c10, per scenario: the floor, "floor + parse" (one orjson parse of the body, held
    until the answer is relayed) and toolcall-guard, as req/s (÷ floor) and CPU µs per
    request; the geometric mean over the issue's four chat scenarios last. What parsing alone
    costs is the ceiling of any proxy that reads the body, toolcall-guard's included."""
    header = (
        "scenario · c10",
        "floor req/s",
        "floor + parse req/s (÷ floor)",
        "toolcall-guard req/s (÷ floor)",
        "CPU µs/req floor / floor + parse / toolcall-guard",
        "parse's share of guard - floor",
    )
    rows = []
    ratios: dict[str, list[float]] = {"parse": [], "guard": []}
    for body in bodies_of(fig):
        n = f"{body} · c10"
        rps = {t: fig.get(n, t, "rps") for t in ("floor", "parse", "guard")}
        cpu = {t: fig.get(n, t, "cpu_us") for t in ("floor", "parse", "guard")}
        if body in CHAT_NAMES:
            for t, seen in ratios.items():
                seen.append(rps[t] / rps["floor"])
        over = cpu["guard"] - cpu["floor"]
        share = (cpu["parse"] - cpu["floor"]) / over * 100 if over > 0 else float("nan")
        rows.append(
            (
                n,
                f"{rps['floor']:.0f}",
                f"{rps['parse']:.0f} ({rps['parse'] / rps['floor']:.2f})",
                f"{rps['guard']:.0f} ({rps['guard'] / rps['floor']:.2f})",
                " / ".join(f"{cpu[t]:.0f}" for t in ("floor", "parse", "guard")),
                f"{share:.0f} %",
            )
        )
    if all(len(v) == len(CHAT_NAMES) for v in ratios.values()):
        mean = {t: geomean(v) for t, v in ratios.items()}
        rows.append(
            (
                "geometric mean, 4 chat scenarios",
                "1.00",
                f"{mean['parse']:.2f}",
                f"{mean['guard']:.2f}",
                "",
                "",
            )
        )
    return table(header, rows)
