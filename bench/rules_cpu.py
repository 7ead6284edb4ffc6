"""CPU time of the Messages rules, in process: the bench's Messages bodies (clean and broken)
sanitized under the anthropic policy, against the plain ``orjson.loads`` of the same bytes.

``python -m bench.rules_cpu ROOT [ROOT…]`` compares source trees (e.g. main's and a branch's)
in one interleaved run: one worker process per tree (its ``proxy`` first on the path), asked in
turn for a batch, so that the trees share the machine's noise. Each figure is the median over
batches of the CPU time (``time.process_time``) per call, in µs.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

KINDS = ("messages", "messages-broken")
BATCH = 20


def _cpu_per_call(work: Callable[[], Any], n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        work()
    return (time.process_time() - start) / n * 1e6


def _worker() -> None:
    """Answer each line read (a batch size) with one JSON line of µs per call."""
    import orjson

    from bench import bodies
    from proxy.core.policy import build_policy
    from proxy.core.wire import MESSAGES, sanitize_body

    policy = build_policy("anthropic")
    data = {kind: bodies.body(kind, stream=False) for kind in KINDS}
    work: dict[str, Callable[[], Any]] = {"parse": lambda: orjson.loads(data["messages"])}
    for kind in KINDS:
        parsed = orjson.loads(data[kind])
        work[kind] = lambda parsed=parsed: sanitize_body(MESSAGES, parsed, policy)
    for each in work.values():
        _cpu_per_call(each, 5)  # warm
    print("ready", flush=True)
    for line in sys.stdin:
        n = int(line)
        print(json.dumps({name: _cpu_per_call(w, n) for name, w in work.items()}), flush=True)


def compare(roots: list[str], rounds: int) -> dict[str, dict[str, float]]:
    """Median µs per call of each figure, per tree, interleaved batch by batch."""
    workers = {}
    for root in roots:
        env = {**os.environ, "PYTHONPATH": root}
        workers[root] = subprocess.Popen(
            [sys.executable, "-m", "bench.rules_cpu", "--worker"],
            cwd=root,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    samples: dict[str, dict[str, list[float]]] = {r: {} for r in roots}
    try:
        for proc in workers.values():
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
        for _ in range(rounds):
            for root, proc in workers.items():
                assert proc.stdin is not None
                assert proc.stdout is not None
                proc.stdin.write(f"{BATCH}\n")
                proc.stdin.flush()
                for name, value in json.loads(proc.stdout.readline()).items():
                    samples[root].setdefault(name, []).append(value)
    finally:
        for proc in workers.values():
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=30)
    return {r: {k: statistics.median(v) for k, v in s.items()} for r, s in samples.items()}


def main(argv: list[str]) -> None:
    if argv[:1] == ["--worker"]:
        _worker()
        return
    rounds = int(os.environ.get("ROUNDS", "30"))
    for root, figures in compare(argv, rounds).items():
        parse = figures["parse"]
        line = "  ".join(
            f"{kind} {figures[kind]:.0f} µs ({figures[kind] / parse:.2f} x parse)" for kind in KINDS
        )
        print(f"{root}: parse {parse:.0f} µs  {line}")


if __name__ == "__main__":
    main(sys.argv[1:])
