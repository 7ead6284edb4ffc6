"""Instructions per clean request under callgrind: issue 34's ratio, without the noise.

CPU time per request on this shared 2-core machine moves by up to 25 % between two runs of
``make bench`` on the same tree (bench/results/performance.md): too much to read a change of a
few per cent in "toolcall-guard ÷ floor + parse". callgrind counts instructions, the same for
the same code and inputs whatever else runs. This serves floor + parse, toolcall-guard and, where
asked, toolcall-guard with tracing on (exporting to the bench's OTLP sink, bench/tracing.py)
under callgrind (every thread), sends each clean body of ``make bench`` one request at a time on
one kept-alive connection, and counts the instructions per request once the servers are warm:
the counters are zeroed after ``WARM`` requests and dumped after ``COUNTED`` more.

Instructions are not CPU time (a cache miss costs no instruction, the kernel's share is not
counted), so the ratios differ from the load phase's; what they give is a figure that moves only
when the code does. ``python -m bench.clean_counts [--output FILE]``; ``make bench`` runs it
after the load phases when valgrind is installed (about four minutes).
"""

from __future__ import annotations

import argparse
import http.client
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import bodies, streams, tracing
from bench.servers import ROOT, Server

#: The clean scenarios of ``make bench`` (JSON answers).
KINDS = ("small", "history", "responses", "messages", "gemini")
WARM = 45
COUNTED = 150
#: Issue 34's goal: toolcall-guard ÷ floor + parse (issue 36's, tracing on ÷ off, is tracing.GOAL).
GOAL = 1.5
#: The traced guard exports a batch when its queue holds ``COUNTED`` requests' spans, never on
#: a timer (nor its metrics): under callgrind a timed export falls in a counting window or not
#: as the machine's load has it. So each window pays for exactly one export of ``COUNTED``
#: (with ``WARM`` 45, the five windows reach a full queue 15 to 120 requests in, never at an
#: edge: 195 requests a scenario).
EXPORT_BY_COUNT = {
    "OTEL_BSP_SCHEDULE_DELAY": "3600000",
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": str(COUNTED),
    "OTEL_METRIC_EXPORT_INTERVAL": "3600000",
}


def available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


class Counted:
    """One bench server under callgrind, its counters read per scenario."""

    def __init__(self, name: str, kind: str, upstream: str, workdir: Path, **env: str) -> None:
        self.dir = workdir / name.replace(" ", "-").replace("+", "plus")
        self.dir.mkdir(parents=True)
        wrapper = (
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            f"--callgrind-out-file={self.dir}/callgrind.out",
        )
        log = f"sqlite:///{self.dir}/repairs.sqlite3"
        self.server = Server(
            kind, upstream, self.dir, log, ROOT, wrapper=wrapper, ready_within=600, env=env
        )
        self._seen: set[Path] = set()

    def per_request(self, kind: str) -> float:
        """Instructions per request of ``kind``'s body, all threads."""
        body = bodies.body(kind, stream=False)
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=600)
        try:
            self._send(conn, kind, body, WARM)
            self._control("-z")
            self._send(conn, kind, body, COUNTED)
            self._control("-d")
        finally:
            conn.close()
        return self._dumped() / COUNTED

    def _send(self, conn: http.client.HTTPConnection, kind: str, body: bytes, n: int) -> None:
        for _ in range(n):
            conn.request("POST", bodies.path(kind), body, streams.HEADERS)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"{self.server.kind} answered {response.status} to {kind}")

    def _control(self, command: str) -> None:
        pid = str(self.server.process.pid)
        subprocess.run(["callgrind_control", command, pid], check=True, capture_output=True)

    def _dumped(self) -> int:
        total = 0
        for path in sorted(set(self.dir.glob("callgrind.out.*")) - self._seen):
            self._seen.add(path)
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    total += int(line.split()[1])
                    break
        return total

    def stop(self) -> None:
        self.server.stop()


def measure(
    workdir: Path, traced: bool = True, kinds: Sequence[str] = KINDS
) -> dict[str, dict[str, float]]:
    """{kind: {target: instructions per request}}, for each of ``kinds``."""
    upstream = Server("upstream", logdir=workdir)
    sink = Server("otlp-sink", logdir=workdir) if traced else None
    servers: dict[str, Counted] = {}
    try:
        servers["floor + parse"] = Counted("floor + parse", "floor-parse", upstream.url, workdir)
        servers["toolcall-guard"] = Counted("toolcall-guard", "guard", upstream.url, workdir)
        if sink is not None:
            env = {**tracing.environment(sink.url), **EXPORT_BY_COUNT}
            servers["tracing on"] = Counted("tracing on", "guard", upstream.url, workdir, **env)
        return {
            kind: {name: server.per_request(kind) for name, server in servers.items()}
            for kind in kinds
        }
    finally:
        for server in servers.values():
            server.stop()
        if sink is not None:
            sink.stop()
        upstream.stop()


def table(figures: dict[str, dict[str, float]]) -> str:
    """The counts as one Markdown table, with the two ratios the issues set goals for."""
    traced = any("tracing on" in row for row in figures.values())
    head = "| scenario | floor + parse, k | toolcall-guard, k "
    head += f"| **÷ floor + parse** (goal ≤ {GOAL})"
    rule = "|---|---|---|---"
    if traced:
        head += f" | tracing on, k | **on ÷ off** (goal ≤ {tracing.GOAL:.2f})"
        rule += "|---|---"
    lines = [head + " |", rule + "|"]
    for kind, row in figures.items():
        parse, guard = row["floor + parse"], row["toolcall-guard"]
        line = f"| {kind} · json | {parse / 1e3:,.0f} | {guard / 1e3:,.0f} | {guard / parse:.2f}"
        if traced:
            on = row["tracing on"]
            line += f" | {on / 1e3:,.0f} | {on / guard:.2f}"
        lines.append(line + " |")
    return "\n".join(lines)


def report(figures: dict[str, dict[str, float]]) -> str:
    """The section ``make bench`` adds to its results."""
    return "\n".join(
        [
            "## Instructions per clean request (callgrind, all threads)",
            "",
            f"One request at a time, {COUNTED} counted after {WARM} to warm up, per scenario "
            "(`python -m bench.clean_counts`): the figure that moves only when the code does.",
            "",
            table(figures),
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.clean_counts", description=__doc__)
    parser.add_argument("--output", type=Path, help="also write the section to this file")
    parser.add_argument("--no-tracing", action="store_true", help="leave out tracing on")
    parser.add_argument(
        "--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="only these scenarios"
    )
    args = parser.parse_args()
    if not available():
        raise SystemExit("valgrind (callgrind) is not installed: apt-get install valgrind")
    with tempfile.TemporaryDirectory(prefix="toolcall-guard-counts-") as tmp:
        text = report(measure(Path(tmp), traced=not args.no_tracing, kinds=args.kinds))
    if args.output is not None:
        args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
