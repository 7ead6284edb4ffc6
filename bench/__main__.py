"""``make bench``: toolcall-guard against a direct call and a minimal pass-through proxy, plus the
sanitizer micro-benchmark; writes ``bench/results/latest.md`` and prints the targets table.

Every server (fake upstream, floor, floor + parse, toolcall-guard) runs in its own process on
loopback, started and stopped here. Sizes come from flags or ``BENCH_*`` environment variables;
the defaults take about 12 minutes on a 2-core machine (15 with ``--baseline``), ``--quick``
about three; ``--only TEXT`` narrows the load scenarios, ``--baseline DIR`` adds toolcall-guard
from an older tree, interleaved.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import growth, phases, report, sanitize, sessions, tables, tracing
from bench.load import Loader, ensure_wrk
from bench.servers import ROOT, Server, guard_available

RESULTS = ROOT / "bench" / "results" / "latest.md"
QUICK = phases.Config(
    rounds=1,
    seconds=1,
    short_seconds=1,
    warmup=1,
    pacing_requests=5,
    streams=200,
    stream_chunks=8,
    leak_checkpoint=1_000,
    leak_requests=5_000,
    leak_floor=False,
)
_START = time.monotonic()


def log(message: str) -> None:
    print(f"[{time.monotonic() - _START:6.1f} s] {message}", file=sys.stderr, flush=True)


def _flag(text: str) -> bool:
    return text.lower() in ("1", "true", "yes", "on")


def parse(argv: list[str]) -> tuple[phases.Config, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of about three minutes")
    parser.add_argument("--no-guard", action="store_true", help="direct and floor only")
    parser.add_argument(
        "--wait-guard",
        type=float,
        default=0.0,
        metavar="S",
        help="wait up to S seconds for proxy.app to become importable",
    )
    parser.add_argument("--skip-sanitizer", action="store_true")
    parser.add_argument(
        "--no-tracing",
        action="store_true",
        help="leave out toolcall-guard with OpenTelemetry on (bench/tracing.py)",
    )
    parser.add_argument(
        "--no-parse-floor",
        action="store_true",
        help="leave out 'floor + parse' (the floor plus one orjson parse of each POST body)",
    )
    parser.add_argument(
        "--only",
        default="",
        metavar="TEXT",
        help="load scenarios whose name contains TEXT only (e.g. 'history · json')",
    )
    parser.add_argument(
        "--repair-log",
        default=os.environ.get("BENCH_REPAIR_LOG", "sqlite"),
        help="toolcall-guard's repair log: 'sqlite' (default, as the product ships: a file in the "
        "bench's temporary directory), memory:// or any URL it accepts (env BENCH_REPAIR_LOG)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="also measure toolcall-guard from DIR (a copy of the tree with an older proxy/), "
        "interleaved with the others: before/after figures from the same run",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    base = QUICK if "--quick" in argv else phases.Config()
    for f in dataclasses.fields(phases.Config):
        convert = _flag if f.type == "bool" else type(getattr(base, f.name))
        env = os.environ.get(f"BENCH_{f.name.upper()}")
        default = getattr(base, f.name) if env is None else convert(env)
        parser.add_argument(
            f"--{f.name.replace('_', '-')}",
            type=convert,
            default=default,
            help=f"(env BENCH_{f.name.upper()}, default {default})",
        )
    args = parser.parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(phases.Config)}
    return phases.Config(**values), args


def machine() -> dict[str, str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        text=True,
        capture_output=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain"], cwd=ROOT, text=True, capture_output=True, check=False
    ).stdout.strip()
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {cpu}, "
        f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "commit": (commit or "unknown") + (" (with uncommitted changes)" if dirty else ""),
        "load average at start": _loadavg(),
    }


def _loadavg() -> str:
    """1, 5 and 15-minute load averages: the machine is shared, this says how busy it was."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def want_guard(args: argparse.Namespace) -> bool:
    if args.no_guard:
        return False
    deadline = time.monotonic() + args.wait_guard
    while not guard_available():
        if time.monotonic() >= deadline:
            log("proxy.app is not importable: measuring direct and floor only")
            return False
        time.sleep(10)
    return True


def measure(config: phases.Config, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    loader = Loader(workdir, ensure_wrk())
    upstream = Server("upstream", logdir=workdir)
    targets = {"direct": upstream}
    out: dict[str, Any] = {"loader": loader.name, "leaks": {}, "logs": {}, "repair_log": "-"}
    sink: Server | None = None
    try:
        targets["floor"] = Server("floor", upstream.url, workdir)
        if not args.no_parse_floor:
            targets["parse"] = Server("floor-parse", upstream.url, workdir)
        if want_guard(args):
            out["repair_log"], sink = _guards(args, upstream.url, workdir, targets)
            if sink is not None:
                out["off_modules"] = tracing.off_imports()
        out["targets"] = list(targets)
        bench = phases.Bench(workdir, loader, upstream, targets)
        bench.only[tracing.TARGET] = tracing.MEASURED
        out["check"] = phases.check(bench)
        log(f"servers up ({', '.join(targets)}), load generator {loader.name}; warming up")
        phases.warm(bench, config.warmup, phases.CLEAN)
        out["rows"] = phases.scenarios(bench, config, _only(phases.CLEAN, args.only), log)
        out["check"] |= tracing.received(sink)
        log("paced streams")
        out["pacing"] = phases.pacing(bench, config)
        log(f"{config.streams} open streams")
        out["held"] = phases.open_streams(bench, config)
        proxies = {t: s for t, s in targets.items() if t not in phases.LOAD_ONLY}
        out["peaks"] = {t: s.peak_rss() for t, s in proxies.items()}
        phases.warm(bench, config.warmup, phases.BROKEN)
        out["rows"] += phases.scenarios(bench, config, _only(phases.BROKEN, args.only), log)
        out["after_broken"] = {t: (s.rss(), s.peak_rss()) for t, s in proxies.items()}
        if "guard" in targets:
            log(f"agent sessions ({sessions.SESSIONS} at once, {sessions.TURNS} turns each)")
            out["sessions"] = sessions.run(targets["guard"], out["repair_log"], config.rounds)
        for t in [t for t in ("guard", "floor") if t in targets]:
            if t != "floor" or config.leak_floor:
                out["leaks"][t] = phases.leak(bench, t, config, log)
        return out
    finally:
        for target, server in reversed(targets.items()):
            server.stop()
            out["logs"][target] = server.log_tail()
        tracing.stop(sink)


def _guards(
    args: argparse.Namespace, upstream: str, workdir: Path, targets: dict[str, Server]
) -> tuple[str, Server | None]:
    """toolcall-guard (and its baseline, and with tracing on) added to ``targets``: the repair
    log's URL, and the OTLP sink when tracing is measured."""
    url = args.repair_log
    if url == "sqlite":
        url = f"sqlite:///{workdir}/repairs.sqlite3"
    if args.baseline is not None:
        base = url.replace("repairs.sqlite3", "repairs-base.sqlite3")
        targets["base"] = Server("guard", upstream, workdir, base, args.baseline)
    targets["guard"] = Server("guard", upstream, workdir, url)
    if args.no_tracing:
        return url, None
    return url, tracing.add_target(targets, upstream, workdir, url)  # bench/tracing.py


def _only(which: list[phases.Scenario], text: str) -> list[phases.Scenario]:
    return [s for s in which if text in s.name]


def render(
    meta: dict[str, str], config: phases.Config, out: dict[str, Any], sanitizer: str
) -> tuple[str, str]:
    fig = report.Figures(out["rows"])
    pacing = report.Pacing(out["pacing"], config.pace_ms)
    extra = tracing.goal_rows(fig, out.get("off_modules"))
    extra += report.sessions_rows(out.get("sessions") or {})
    extra += report.growth_rows(out.get("growth") or {})
    summary = report.summary(fig, pacing, out["leaks"], extra)
    sizes = ", ".join(f"{f.name}={getattr(config, f.name)}" for f in dataclasses.fields(config))
    head = [f"- **{k}**: {v}" for k, v in meta.items()]
    head += [
        f"- **load generator**: {out['loader']}",
        f"- **sizes**: {sizes}",
        f"- **targets measured**: {', '.join(report.NAMES[t] for t in out['targets'])}",
        f"- **toolcall-guard**: openai preset, repair log {out['repair_log']}",
    ]
    parts = [
        "# Benchmark results",
        "",
        *head,
        "",
        "Medians over rounds; targets interleaved within each round; added = target - direct in "
        "the same round. Floor = raw ASGI on uvicorn + aiohttp client (bench/floor.py). "
        "CPU µs/req = CPU time of the server process the client talks to, per request: on this "
        "shared machine the steadiest figure (latency and req/s move with the neighbours' load).",
        "",
        "## Targets",
        "",
        summary or "(toolcall-guard not measured)",
        "",
        *(
            [
                "What parsing alone costs: the floor that also parses each POST body once "
                "(orjson, the result held until the answer is relayed), interleaved in this run. "
                "Its ratio to the floor is the ceiling of any proxy that reads the body:",
                "",
                tables.ceiling_table(fig),
                "",
            ]
            if {"parse", "guard"} <= set(out["targets"])
            else []
        ),
        "## Per scenario",
        "",
        "Requests per second at each concurrency, floor / toolcall-guard (guard ÷ floor):",
        "",
        tables.rate_table(fig),
        "",
        "CPU µs per request of the server process the client talks to (its threads' run time from "
        "`/proc/<pid>/task/*/schedstat` over the run ÷ its requests):",
        "",
        tables.cpu_table(fig),
        "",
        *(
            [
                "toolcall-guard before (`--baseline`) and after, interleaved in this run:",
                "",
                tables.before_after_table(fig),
                "",
            ]
            if "base" in out["targets"]
            else []
        ),
        "## Latency, concurrency 1 (ms)",
        "",
        report.latency_table(fig),
        "",
        "## Throughput, concurrency 10 and 32",
        "",
        report.throughput_table(fig),
        "",
        f"## Paced streams ({config.pacing_chunks} chunks, {config.pace_ms:g} ms apart, "
        "concurrency 1, aiohttp client)",
        "",
        report.pacing_table(pacing, phases.streaming(out["targets"]), config.pacing_chunks),
        "",
        f"## Agent sessions ({sessions.SESSIONS} conversations at once, {sessions.TURNS} turns)",
        "",
        "Each turn is the previous history plus a user message, a tool call and its result; "
        "broken conversations lost their first assistant message's `tool_calls` (seed 000), "
        "so every turn is repaired and recorded (rounds alternate clean and broken; medians). "
        "CPU includes recording (the repair-log writer thread); bytes are the SQLite log's "
        "growth per broken conversation, checkpointed (bench/sessions.py):",
        "",
        sessions.table(out.get("sessions", {})),
        "",
        f"## One conversation of {growth.TURNS} turns through `toolcall-guard serve`",
        "",
        "The same conversation shape, deepseek-shaped, sent turn after turn through the real "
        "`serve` command (SQLite log) to the DeepSeek emulator, each in its own process; clean "
        "and broken conversations alternate. CPU: user + system of the whole serve process until "
        "the writer has flushed every record; log: its growth per broken conversation, "
        "checkpointed (bench/growth.py):",
        "",
        growth.table(out.get("growth", {})),
        "",
        "## Memory",
        "",
        tables.memory_tables(out, config.streams, fig),
        "",
        "Leak check mix: small json, small stream, 200-message json at concurrency 32 in a fresh "
        "process (the broken history is left out: its repair records are kept by design).",
        "",
        "## Sanitizer micro-benchmark (bench/sanitize.py)",
        "",
        sanitizer,
        "",
        "## Response check",
        "",
        *[f"- {k}: {v}" for k, v in out["check"].items()],
        "",
        "## Server output (last lines; none expected)",
        "",
        *[f"- {report.NAMES[t]}: {_quote(text)}" for t, text in out["logs"].items()],
        *[
            f"- {report.NAMES[t]} (leak check): {_quote(leak['log'])}"
            for t, leak in out["leaks"].items()
        ],
        "",
    ]
    return "\n".join(parts), summary


def _quote(text: str) -> str:
    return "(nothing)" if not text.strip() else "\n\n```\n" + text + "\n```"


def main(argv: list[str]) -> None:
    config, args = parse(argv)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    meta = machine()
    with tempfile.TemporaryDirectory(prefix="toolcall-guard-bench-") as tmp:
        out = measure(config, args, Path(tmp))
    if "guard" in out["targets"]:
        log(f"one conversation of {growth.TURNS} turns through serve, clean and broken")
        out["growth"] = growth.run(config.rounds, baseline=args.baseline)
    meta["load average at end"] = _loadavg()
    sanitizer = "(skipped)"
    if not args.skip_sanitizer:
        log("sanitizer micro-benchmark")
        fig = report.Figures(out["rows"])
        cpu = fig.get("history · json · c10", "guard", "cpu_us")
        sanitizer = sanitize.table(sanitize.run()) + "\n\n" + sanitize.hot_path_table(cpu)
    text, summary = render(meta, config, out, sanitizer)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    log(f"wrote {args.output}")
    print(summary if "guard" in out["targets"] else text)


if __name__ == "__main__":
    main(sys.argv[1:])
