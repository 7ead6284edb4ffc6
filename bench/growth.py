"""One conversation of 60 turns, broken at its start, through ``toolcall-guard serve`` (issue 34).

The run issue 34 describes: ``toolcall-guard serve`` (the real command line, a temporary config
with the SQLite repair log) in front of the DeepSeek emulator (``toolcall-guard emulate``), each
in its own process. One conversation is sent turn after turn, each turn the previous history
plus a user message, an assistant tool call and its result (:func:`bench.sessions.conversation`,
deepseek-shaped); a broken one lost its first assistant message's ``tool_calls`` (seed 000), so
every turn is repaired and recorded. Clean and broken conversations alternate, ``ROUNDS`` of
each, in the same serve process. After each, the bench waits (bounded) until the writer has
flushed every record to the database, then reads the serve process's CPU time: user plus system
of all its threads, from ``/proc/PID/stat`` (fields 14 and 15, what the issue measures, in
10 ms ticks) and from the threads' ``schedstat`` (nanoseconds, a cross-check).

The figures: CPU broken ÷ clean (the target is ≤ 1.5), the log's growth per broken conversation
(checkpointed) ÷ its final body (≤ 3) and whether the last record is complete (its received body
is the last body sent, and it has a forwarded body and findings).

``python -m bench.growth [--rounds N] [--turns N] [--root DIR]``; ``make bench`` runs it too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from bench import sessions
from bench.servers import ROOT, Server, free_port

ROUNDS = 3
TURNS = 60
MODEL = "deepseek-chat"
_TICKS = os.sysconf("SC_CLK_TCK")


class Command(Server):
    """A process started from a ``toolcall-guard`` command line (``python -m proxy ...``)."""

    def __init__(self, name: str, args: list[str], workdir: Path, root: Path, port: int) -> None:
        self.kind = name
        self.root = root
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = workdir / f"{name}.log"
        env = {**os.environ, "PYTHONPATH": str(root)}
        with self.log.open("wb") as out:
            command = [sys.executable, "-m", "proxy", *args]
            self.process = subprocess.Popen(
                command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT
            )
        self._wait_ready(60.0)

    def stat_cpu_seconds(self) -> float:
        """utime + stime of the whole process (all its threads, the exited ones too)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS


def config_text(emulator: str, log: Path, port: int) -> str:
    """A serve config: the SQLite log at ``log``, deepseek at the emulator, JSON log lines."""
    return "\n".join(
        [
            "[server]",
            'host = "127.0.0.1"',
            f"port = {port}",
            'log_format = "json"',
            "[repair_log]",
            f'url = "sqlite:///{log}"',
            "[routing]",
            'default = "deepseek"',
            "[upstreams.deepseek]",
            f'base_url = "{emulator}/v1"',
            'models = ["deepseek-*"]',
            'policy = "deepseek"',
            "",
        ]
    )


def _records(path: Path) -> int:
    count, _ = sessions._stored(path)
    return count


def _flushed(path: Path, count: int, timeout: float = 60.0) -> None:
    """Wait (bounded) until the log holds ``count`` records (first records and turns)."""
    deadline = time.monotonic() + timeout
    while _records(path) < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the log never held {count} records")
        time.sleep(0.05)


def _size(path: Path) -> int:
    return sessions._stored(path)[1]


def _send(http: httpx.Client, url: str, bodies: list[bytes]) -> list[str]:
    """Send each turn in order; the record ids the answers name (none for a clean turn)."""
    ids = []
    for body in bodies:
        response = http.post(url, content=body, headers={"content-type": "application/json"})
        if response.status_code != 200:
            raise RuntimeError(f"a turn answered {response.status_code}: {response.text[:300]}")
        record = response.headers.get("x-toolcall-guard-record")
        if record:
            ids.append(record)
    return ids


def complete(record: dict[str, Any] | None, body: bytes) -> bool:
    """Whether a stored record holds what its turn sent: the body received as sent, the body
    forwarded, and findings."""
    if not record:
        return False
    forwarded = record.get("forwarded")
    return (
        record.get("received") == orjson.loads(body)
        and isinstance(forwarded, dict)
        and bool(forwarded.get("messages"))
        and bool(record.get("findings"))
    )


@dataclass
class Target:
    """One serve process, its log, and what was measured of it."""

    serve: Command
    log: Path
    cpu: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: {"clean": [], "broken": []}
    )
    growth: list[int] = field(default_factory=list)
    last_complete: bool = True


def run(
    rounds: int = ROUNDS, turns: int = TURNS, root: Path = ROOT, baseline: Path | None = None
) -> dict[str, dict[str, Any]]:
    """Interleaved clean and broken conversations through serve from ``root`` (and from
    ``baseline``, in turn with it, when given); the figures of each, by name."""
    roots = {"toolcall-guard": root, **({"baseline": baseline} if baseline else {})}
    with tempfile.TemporaryDirectory(prefix="toolcall-guard-growth-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        emulate = ["emulate", "--provider", "deepseek", "--port", str(port)]
        emulator = Command("emulator", emulate, workdir, root, port)
        targets: dict[str, Target] = {}
        try:
            for name, tree in roots.items():
                targets[name] = _start(name, tree, emulator.url, workdir)
            _measure(targets, rounds, turns)
        finally:
            for target in targets.values():
                target.serve.stop()
            emulator.stop()
    final = len(_bodies(True, "final", turns)[-1])
    return {name: _figures(target, final, turns) for name, target in targets.items()}


def _start(name: str, root: Path, emulator: str, workdir: Path) -> Target:
    """serve from ``root`` with a config of its own (its own log), in front of ``emulator``."""
    port = free_port()
    log = workdir / f"{name}.sqlite3"
    config = workdir / f"{name}.toml"
    config.write_text(config_text(emulator, log, port))
    return Target(Command(name, ["serve", "--config", str(config)], workdir, root, port), log)


def _measure(targets: dict[str, Target], rounds: int, turns: int) -> None:
    with httpx.Client(timeout=60.0) as http:
        for n in range(-1, rounds):  # round -1 warms up (imports, first calls): not counted
            for kind in ("clean", "broken"):
                for name, target in targets.items():
                    bodies = _bodies(kind == "broken", f"{n}-{kind}-{name}", turns)
                    _conversation(http, target, bodies, kind, counted=n >= 0)


def _conversation(
    http: httpx.Client, target: Target, bodies: list[bytes], kind: str, counted: bool
) -> None:
    """Send one conversation to ``target``, wait until its writer flushed, note its cost."""
    serve, log = target.serve, target.log
    stored, size = _records(log), _size(log)
    started = serve.stat_cpu_seconds(), serve.cpu_seconds()
    ids = _send(http, serve.url + "/v1/chat/completions", bodies)
    _flushed(log, stored + len(ids))
    spent = serve.stat_cpu_seconds() - started[0], serve.cpu_seconds() - started[1]
    if kind == "broken":
        if len(ids) != len(bodies):
            raise RuntimeError(f"{len(ids)} of {len(bodies)} broken turns were recorded")
        got = http.get(f"{serve.url}/repairs/{ids[-1]}")
        target.last_complete &= got.status_code == 200 and complete(got.json(), bodies[-1])
    if counted:
        target.cpu[kind].append(spent)
        if kind == "broken":
            target.growth.append(_size(log) - size)


def _bodies(broken: bool, session: str, turns: int) -> list[bytes]:
    return sessions.conversation(broken, session, turns, model=MODEL)


def _figures(target: Target, final: int, turns: int) -> dict[str, Any]:
    cpu = target.cpu

    def total(kind: str, i: int) -> float:
        return sum(spent[i] for spent in cpu[kind])

    def ratio(i: int) -> float:  # a run too short for a 10 ms tick has none
        return total("broken", i) / total("clean", i) if total("clean", i) else 0.0

    ratios = [b[0] / c[0] for c, b in zip(cpu["clean"], cpu["broken"], strict=True) if c[0]]
    log_bytes = statistics.median(target.growth)
    return {
        "turns": turns,
        "rounds": len(cpu["clean"]),
        "clean_ms": total("clean", 0) / len(cpu["clean"]) * 1e3,
        "broken_ms": total("broken", 0) / len(cpu["broken"]) * 1e3,
        "ratio": ratio(0),
        "ratio_median": statistics.median(ratios) if ratios else 0.0,
        "ratio_schedstat": ratio(1),
        "log_bytes": log_bytes,
        "final_body_bytes": final,
        "log_ratio": log_bytes / final,
        "last_record_complete": target.last_complete,
    }


#: The table's rows: label, figure, format, goal.
ROWS = (
    ("CPU ms per clean conversation", "clean_ms", "{:.0f}", ""),
    ("CPU ms per broken conversation", "broken_ms", "{:.0f}", ""),
    ("**broken ÷ clean**, CPU (`/proc/PID/stat`, rounds summed)", "ratio", "{:.2f}", "≤ 1.5"),
    ("broken ÷ clean, median of rounds", "ratio_median", "{:.2f}", ""),
    ("broken ÷ clean, threads' schedstat", "ratio_schedstat", "{:.2f}", ""),
    ("log bytes per broken conversation", "log_bytes", "{:.0f}", ""),
    ("final body (bytes)", "final_body_bytes", "{}", ""),
    ("**log ÷ final body**", "log_ratio", "{:.2f}", "≤ 3"),
    ("**last record complete**", "last_record_complete", "{}", "True"),
)


def table(figures: dict[str, dict[str, Any]]) -> str:
    """The growth run's figures as a Markdown table, a column per serve measured."""
    if not figures:
        return "(not measured)"
    names = list(figures)
    lines = [
        f"| figure | {' | '.join(names)} | goal |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for label, key, form, goal in ROWS:
        values = " | ".join(form.format(figures[name][key]) for name in names)
        lines.append(f"| {label} | {values} | {goal} |")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.growth", description=__doc__)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--root", type=Path, default=ROOT, help="the tree whose proxy/ to run")
    parser.add_argument(
        "--baseline", type=Path, help="also serve from this tree (an older proxy/), interleaved"
    )
    args = parser.parse_args(argv)
    baseline = None if args.baseline is None else args.baseline.resolve()
    figures = run(args.rounds, args.turns, args.root.resolve(), baseline)
    print(f"{args.turns} turns, {args.rounds} rounds of each, interleaved\n")
    print(table(figures))


if __name__ == "__main__":
    main(sys.argv[1:])
