"""Instructions per request under callgrind: what a repaired turn costs, without the noise.

CPU time on this shared 2-core machine moves by 15 % and more between runs, and within a run
when the neighbours' load changes: too much to see a change of a few percent in the cost of a
repaired turn. Instruction counts do not move: valgrind's callgrind counts them, the same for the
same code and inputs whatever else runs. This serves toolcall-guard under callgrind (every
thread: the request path, the repair-log writer, the capture step), drives clean and broken
conversations through it as :mod:`bench.sessions` builds them (a broken one lost its first
assistant message's ``tool_calls``, so every turn is repaired and recorded), and counts the
instructions per request of each, the writer's included: the counters are zeroed before a
conversation set and dumped once the SQLite log holds its every record. A first round warms up
(imports, first calls); the second is reported. ``--baseline DIR`` counts an older tree the
same way, so one run shows before and after.

``python -m bench.instructions [--baseline DIR] [--output FILE]``; it needs Debian's
``valgrind`` and takes about two minutes (three with a baseline).
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import uvloop

from bench import sessions
from bench.servers import ROOT, Server

#: name: (conversations at once, turns each). The agent sessions of ``make bench``, fewer at
#: once (valgrind is ~50 times slower), and one long conversation like issue 23's.
SCENARIOS = {
    "agent sessions (2 x 30 turns)": (2, 30),
    "one conversation of 60 turns": (1, 60),
}
RESULTS = ROOT / "bench" / "results" / "instructions.md"


class Counted:
    """toolcall-guard from ``root`` under callgrind, its SQLite log in ``workdir``."""

    def __init__(self, upstream: Server, root: Path, workdir: Path) -> None:
        workdir.mkdir(parents=True)
        self.dir = workdir
        self.log = workdir / "repairs.sqlite3"
        self.written = 0
        self._seen: set[Path] = set()
        callgrind = ("valgrind", "--tool=callgrind", "--separate-threads=yes")
        wrapper = (*callgrind, f"--callgrind-out-file={workdir}/callgrind.out")
        log = f"sqlite:///{self.log}"
        self.server = Server(
            "guard", upstream.url, workdir, log, root, wrapper=wrapper, ready_within=600
        )

    def count(self, conversations: list[list[bytes]], broken: bool) -> tuple[float, float]:
        """Instructions per request of sending ``conversations`` (all threads; the request
        thread's alone)."""
        self._control("-z")
        url = self.server.url + "/v1/chat/completions"
        requests = uvloop.run(sessions._drive(url, conversations))
        if broken:
            self.written += requests
            sessions._written(self.log, self.written, timeout=600)
        self._control("-d")
        per_thread = self._dumped()
        return sum(per_thread.values()) / requests, per_thread.get(1, 0) / requests

    def _control(self, command: str) -> None:
        pid = str(self.server.process.pid)
        subprocess.run(["callgrind_control", command, pid], check=True, capture_output=True)

    def _dumped(self) -> dict[int, int]:
        """Instructions per thread in the files the last dump wrote (``callgrind.out.N-TT``)."""
        found: dict[int, int] = {}
        for path in sorted(set(self.dir.glob("callgrind.out.*")) - self._seen):
            self._seen.add(path)
            thread = int(path.name.rsplit("-", 1)[1])
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith(("summary:", "totals:")):
                    found[thread] = found.get(thread, 0) + int(line.split()[1])
                    break
        return found


def measure(root: Path, workdir: Path) -> dict[str, dict[str, tuple[float, float]]]:
    """{scenario: {clean|broken: (instructions per request, the request thread's)}}."""
    workdir.mkdir(parents=True)
    upstream = Server("upstream", logdir=workdir)
    try:
        guard = Counted(upstream, root, workdir / "guard")
        try:
            figures: dict[str, dict[str, tuple[float, float]]] = {}
            for name, (count, turns) in SCENARIOS.items():
                for round_ in ("warm-up", "counted"):
                    for kind in ("clean", "broken"):
                        tag = f"{name}-{round_}-{kind}"
                        convs = [
                            sessions.conversation(kind == "broken", f"{tag}-{i}", turns)
                            for i in range(count)
                        ]
                        figures.setdefault(name, {})[kind] = guard.count(convs, kind == "broken")
            return figures
        finally:
            guard.server.stop()
    finally:
        upstream.stop()


def table(runs: dict[str, dict[str, dict[str, tuple[float, float]]]]) -> str:
    """The figures of each tree as one Markdown table."""
    lines = [
        "| scenario | tree | clean, M instructions/request | broken | broken ÷ clean "
        "| broken's extra on the request thread, M |",
        "|---|---|---|---|---|---|",
    ]
    for scenario in SCENARIOS:
        for tree, figures in runs.items():
            (clean, clean_main), (broken, broken_main) = (
                figures[scenario]["clean"],
                figures[scenario]["broken"],
            )
            lines.append(
                f"| {scenario} | {tree} | {clean / 1e6:.3f} | {broken / 1e6:.3f} "
                f"| {broken / clean:.3f} | {(broken_main - clean_main) / 1e6:.3f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.instructions", description=__doc__)
    parser.add_argument("--baseline", type=Path, help="an older tree to count the same way")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    trees = {"this": ROOT} if args.baseline is None else {"baseline": args.baseline, "this": ROOT}
    with tempfile.TemporaryDirectory(prefix="toolcall-guard-instructions-") as tmp:
        runs = {name: measure(root, Path(tmp) / name) for name, root in trees.items()}
    text = table(runs)
    head = [f"- **{name}**: {root} at {_commit(root)}" for name, root in trees.items()]
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = f"# Instructions per request (`python -m bench.instructions`, {when})"
    args.output.write_text("\n".join([title, "", *head, "", text, ""]))
    print(text)


def _commit(root: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
        check=False,
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() or "(no git)"


if __name__ == "__main__":
    main()
