"""``make bench``: toolcall-guard against a direct call and a minimal pass-through proxy, plus the
sanitizer micro-benchmark; writes ``bench/results/latest.md`` and prints the targets table.

Every server (fake upstream, floor, floor + parse, toolcall-guard) runs in its own process on
loopback, started and stopped here. Sizes come from flags or ``BENCH_*`` environment variables;
the defaults take about 12 minutes on a 2-core machine (15 with ``--baseline``), ``--quick``
about three; ``--only TEXT`` narrows the load scenarios, ``--baseline DIR`` adds toolcall-guard
from an older tree, interleaved. Where valgrind is installed, the clean requests are then counted
in instructions too (:mod:`bench.clean_counts`, about five minutes more; ``--no-counts``): CPU
time moves by up to 25 % between two runs here, the counts do not.
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

from bench import clean_counts, growth, markdown, phases, report, sanitize, sessions, tracing
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
        "--no-counts",
        action="store_true",
        help="leave out the instruction counts of the clean requests (bench/clean_counts.py)",
    )
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
    counts = ""
    if "guard" in out["targets"] and not args.no_counts and clean_counts.available():
        log("instructions per clean request under callgrind")
        with tempfile.TemporaryDirectory(prefix="toolcall-guard-counts-") as tmp:
            counts = clean_counts.report(clean_counts.measure(Path(tmp), not args.no_tracing))
    meta["load average at end"] = _loadavg()
    sanitizer = "(skipped)"
    if not args.skip_sanitizer:
        log("sanitizer micro-benchmark")
        fig = report.Figures(out["rows"])
        cpu = fig.get("history · json · c10", "guard", "cpu_us")
        sanitizer = sanitize.table(sanitize.run()) + "\n\n" + sanitize.hot_path_table(cpu)
    text, summary = markdown.render(meta, config, out, sanitizer)
    if counts:
        text, summary = f"{text}\n{counts}", f"{summary}\n\n{counts}"
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    log(f"wrote {args.output}")
    print(summary if "guard" in out["targets"] else text)


if __name__ == "__main__":
    main(sys.argv[1:])
