"""The phases of the proxy benchmark, each returning plain data for :mod:`bench.report`.

Targets are measured interleaved (direct, floor, guard, direct, floor, guard…) over several
rounds so that the machine's drift hits all of them alike; the report takes medians.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import uvloop

from bench import bodies, streams
from bench.load import Loader
from bench.servers import Server

STREAM_CHUNKS = 20  # unpaced streams under wrk load


@dataclass(frozen=True)
class Config:
    """Sizes of a run; ``--quick`` shrinks all of them."""

    rounds: int = 3
    seconds: int = 2  # each run at concurrency 10 (the throughput target's)
    short_seconds: int = 1  # each run at concurrency 1 and 32
    warmup: int = 3
    pacing_requests: int = 10
    pacing_chunks: int = 10
    pace_ms: float = 20.0
    streams: int = 1000
    stream_chunks: int = 24
    stream_pace_ms: float = 250.0
    leak_checkpoint: int = 10_000
    leak_requests: int = 100_000
    leak_floor: bool = True


@dataclass(frozen=True)
class Scenario:
    kind: str  # bodies.KINDS
    stream: bool
    concurrency: int

    @property
    def body(self) -> str:
        """The scenario without its concurrency: ``history · stream``."""
        return f"{self.kind} · {'stream' if self.stream else 'json'}"

    @property
    def name(self) -> str:
        return f"{self.body} · c{self.concurrency}"


CONCURRENCIES = (1, 10, 32)
#: The four scenarios of the issue's targets (issue 17), in the order the report shows them.
CHAT_BODIES = [("small", False), ("small", True), ("history", False), ("history", True)]
OTHER_APIS = [("responses", False), ("messages", False), ("gemini", False)]
CLEAN = [Scenario(k, s, c) for k, s in [*CHAT_BODIES, *OTHER_APIS] for c in CONCURRENCIES]
#: Run after everything else on the shared processes: every repaired request leaves a record
#: (both bodies), queued in toolcall-guard until written (kept in RAM with ``--repair-log
#: memory://``), which would otherwise weigh on its RSS figures.
BROKEN = [
    Scenario(k, False, c)
    for k in ("broken", "responses-broken", "messages-broken", "gemini-broken")
    for c in CONCURRENCIES
]
SCENARIOS = CLEAN + BROKEN


class Bench:
    """The servers, the body files and the load generator of one run."""

    def __init__(
        self, workdir: Path, loader: Loader, upstream: Server, targets: dict[str, Server]
    ) -> None:
        self.loader = loader
        self.upstream = upstream
        self.targets = targets  # name -> the server the client talks to ("direct": upstream)
        #: Targets measured on some scenarios only: name -> those scenarios' names.
        self.only: dict[str, frozenset[str]] = {}
        self.files: dict[tuple[str, bool], Path] = {}
        for scenario in SCENARIOS:
            kind, stream = scenario.kind, scenario.stream
            path = workdir / f"{kind}{'-stream' if stream else ''}.json"
            path.write_bytes(bodies.body(kind, stream=stream))
            self.files[kind, stream] = path

    def url(self, target: str, kind: str = "small") -> str:
        return self.targets[target].url + bodies.path(kind)

    def load(self, server: Server, scenario: Scenario, seconds: float) -> dict[str, Any]:
        """One wrk run, with the CPU the server's process spent per request."""
        headers = {"x-bench-chunks": str(STREAM_CHUNKS)} if scenario.stream else {}
        cpu = server.cpu_seconds(), self.upstream.cpu_seconds()
        path = self.files[scenario.kind, scenario.stream]
        url = server.url + bodies.path(scenario.kind)
        run = self.loader.run(url, path, scenario.concurrency, seconds, headers)
        n = max(run.requests, 1)
        return {
            **asdict(run),
            "rps": run.rps,
            "cpu_us": (server.cpu_seconds() - cpu[0]) / n * 1e6,
            "upstream_cpu_us": (self.upstream.cpu_seconds() - cpu[1]) / n * 1e6,
            "loadgen_cpu_us": run.loadgen_cpu_s / n * 1e6,
        }


def check(bench: Bench) -> dict[str, str]:
    """One request per target and body: 200, and toolcall-guard's outcome header as intended
    (a Responses body may still be relayed untouched: no outcome header, reported as ``-``)."""
    seen = {}
    for target, server in bench.targets.items():
        for (kind, stream), path in bench.files.items():
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            conn.request("POST", bodies.path(kind), path.read_bytes(), streams.HEADERS)
            response = conn.getresponse()
            response.read()
            conn.close()
            outcome = response.getheader("x-toolcall-guard-outcome", "-")
            seen[f"{target} {kind} stream={stream}"] = f"{response.status} {outcome}"
            if response.status != 200:
                raise RuntimeError(f"{target} answered {response.status} to the {kind} body")
            relayed = outcome == "-" and bodies.path(kind) == bodies.RESPONSES
            guard = target in ("guard", "base", "otel")
            if guard and outcome != bodies.expected(kind) and not relayed:
                raise RuntimeError(f"toolcall-guard says {outcome} for the {kind} body")
    return seen


def warm(bench: Bench, seconds: int, which: list[Scenario]) -> None:
    """Fill connection pools and let the interpreter specialise before anything is measured:
    each target gets every body of ``which`` in turn."""
    for path in dict.fromkeys(bodies.path(s.kind) for s in which):
        mix = list(
            dict.fromkeys(
                bench.files[s.kind, s.stream] for s in which if bodies.path(s.kind) == path
            )
        )
        for server in bench.targets.values():
            bench.loader.run(server.url + path, mix, 8, seconds, {})


def scenarios(
    bench: Bench, config: Config, which: list[Scenario], log: Callable[[str], None]
) -> list[dict[str, Any]]:
    """The scenarios ``which``, every target, interleaved, ``config.rounds`` times."""
    rows = []
    for round_ in range(config.rounds):
        for scenario in which:
            seconds = config.seconds if scenario.concurrency == 10 else config.short_seconds
            for target, server in bench.targets.items():
                if scenario.name not in bench.only.get(target, (scenario.name,)):
                    continue
                row = bench.load(server, scenario, seconds)
                rows.append({"round": round_, "scenario": scenario.name, "target": target, **row})
            log(f"round {round_ + 1}/{config.rounds}: {scenario.name}")
    return rows


#: Targets measured under load only: "floor + parse" bounds throughput; streams, memory and
#: leaks are the floor's.
LOAD_ONLY = frozenset({"direct", "parse", "otel"})


def streaming(targets: list[str]) -> list[str]:
    """The targets the paced-stream phase measures."""
    return [t for t in targets if t not in ("parse", "otel")]


def pacing(bench: Bench, config: Config) -> list[dict[str, Any]]:
    """Paced streams at concurrency 1: time to first chunk and gaps between chunks."""
    rows = []
    for round_ in range(config.rounds):
        for kind in ("small", "history"):
            body = bench.files[kind, True].read_bytes()
            for target in streaming(list(bench.targets)):
                seen = uvloop.run(
                    streams.paced(
                        bench.url(target, kind),
                        body,
                        requests=config.pacing_requests,
                        chunks=config.pacing_chunks,
                        pace_ms=config.pace_ms,
                    )
                )
                for s in seen:
                    rows.append({"round": round_, "kind": kind, "target": target, **asdict(s)})
    return rows


def open_streams(bench: Bench, config: Config) -> list[dict[str, Any]]:
    """``config.streams`` streams open at once through each proxy; its RSS before, during, after."""
    rows = []
    body = bench.files["small", True].read_bytes()
    for target, server in bench.targets.items():
        if target in LOAD_ONLY:
            continue
        before = server.rss()
        held = uvloop.run(
            streams.hold_open(
                bench.url(target),
                body,
                count=config.streams,
                chunks=config.stream_chunks,
                pace_ms=config.stream_pace_ms,
                rss=server.rss,
            )
        )
        time.sleep(0.5)
        rows.append(
            {"target": target, "rss_before": before, "rss_after": server.rss(), **asdict(held)}
        )
    return rows


LEAK_MIX = [("small", False), ("small", True), ("history", False)]


def leak(bench: Bench, target: str, config: Config, log: Callable[[str], None]) -> dict[str, Any]:
    """A fresh ``target`` process under a mixed load until ``leak_requests``; its RSS on the way
    (1-second runs up to the checkpoint, so that it lands near it; up to 5-second runs after)."""
    old = bench.targets[target]
    server = Server(old.kind, bench.upstream.url, bench.upstream.log.parent, old.repair_log)
    mix = [bench.files[kind, stream] for kind, stream in LEAK_MIX]
    try:
        done, series = 0, [(0, server.rss())]
        checkpoint: tuple[int, int] | None = None
        rate = 0.0
        while done < config.leak_requests:
            seconds = 1 if checkpoint is None else 5
            if rate:  # do not overshoot the total by much
                seconds = min(seconds, max(1, round((config.leak_requests - done) / rate)))
            run = bench.loader.run(server.url + bodies.CHAT, mix, 32, seconds, {})
            done, rate = done + run.requests, run.rps
            series.append((done, server.rss()))
            if checkpoint is None and done >= config.leak_checkpoint:
                checkpoint = series[-1]
        peak = server.peak_rss()
    finally:
        server.stop()
    log(f"leak check {target}: {done:,} requests")
    return {
        "target": target,
        "checkpoint": checkpoint,
        "final": series[-1],
        "series": series,
        "peak": peak,
        "log": server.log_tail(),
    }
