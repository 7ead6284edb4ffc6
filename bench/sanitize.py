"""Sanitizer micro-benchmark: cost per message, clean and broken, against ``orjson.loads``.

A 1,000-message history with 300 tool calls (100 rounds of 3 parallel calls plus plain
turns), valid for each provider preset, and a broken copy (lost tool_calls, missing and
duplicated results, dict arguments, stray fields). Contents are sized like real agent
traffic (user 200 chars, assistant 400, tool results 800); a second run with 20-char
contents shows the worst case for the ratio, where JSON parsing is cheapest.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson

from proxy.core.chat.messages import History
from proxy.core.engine import Outcome, sanitize
from proxy.core.policy import Policy, build_policy

Message = dict[str, Any]
Samples = dict[str, list[float]]
SIGNATURE = {"google": {"thought_signature": "skip_thought_signature_validator"}}


def engine(messages: list[Message], policy: Policy) -> Outcome:
    """The engine over chat ``messages`` alone: the structural checks (``messages_of``) that
    precede it on the proxy's path are timed apart."""
    return sanitize(History(messages), policy, "chat")


def _text(n: int, seed: int) -> str:
    words = ("tool", "call", "history", "proxy", "result", "agent", "message", "valid")
    out = " ".join(words[(seed + k) % len(words)] for k in range(n // 6 + 1))
    return out[:n]


def clean_history(dialect: str, size: int = 200) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": _text(size, 0)}]
    for unit in range(100):
        messages.append({"role": "user", "content": _text(size, unit)})
        calls = [
            {
                "id": f"call_{unit}_{k}",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "src/app.py"}'},
            }
            for k in range(3)
        ]
        assistant: Message = {
            "role": "assistant",
            "content": _text(size, unit),
            "tool_calls": calls,
        }
        if dialect == "deepseek":
            assistant["reasoning_content"] = ""
        messages.append(assistant)
        for call in calls:
            tool: Message = {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": _text(size * 4, unit),
            }
            if dialect == "gemini":
                tool["name"] = "read_file"
            messages.append(tool)
        messages.append({"role": "assistant", "content": _text(size * 2, unit)})
    while len(messages) < 1000:
        messages.append({"role": "user", "content": _text(size, len(messages))})
        messages.append({"role": "assistant", "content": _text(size * 2, len(messages))})
    return messages[:1000]


def broken_history(dialect: str, size: int = 200) -> list[Message]:
    messages = copy.deepcopy(clean_history(dialect, size))
    callers = [i for i, m in enumerate(messages) if "tool_calls" in m]
    for n, i in enumerate(callers[::10]):
        if n % 3 == 0:
            del messages[i]["tool_calls"]  # seed 000: lost on save
        elif n % 3 == 1:
            messages[i]["tool_calls"][0]["function"]["arguments"] = {"path": "a"}  # seed 002
        else:
            messages[i]["timestamp"] = 1700000000
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    for i in reversed(tools[5::40]):
        del messages[i]  # seed 003: a call left unanswered
    return messages


def _interleaved_us(fns: dict[str, Callable[[], object]], rounds: int, inner: int) -> Samples:
    """Per-round µs per call of each of ``fns``, taken in turn in every round.

    Interleaved, so that a ratio compares runs made under the same load (the machine running
    the benchmark is often busy with other work, and its speed drifts by tens of percent).
    """
    samples: Samples = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.thread_time()  # CPU time: neighbours' load does not count
            for _ in range(inner):
                fn()
            samples[name].append((time.thread_time() - start) / inner * 1e6)
    return samples


def _ratio(samples: Samples, name: str, base: str) -> float:
    """The median over rounds of ``name``'s time over ``base``'s in the same round."""
    return statistics.median(a / b for a, b in zip(samples[name], samples[base], strict=True))


def measure(dialect: str, size: int) -> dict[str, float]:
    policy = build_policy(dialect)
    clean = clean_history(dialect, size)
    broken = broken_history(dialect, size)
    assert engine(clean, policy).findings == (), "the clean history must be clean"
    clean_raw = orjson.dumps({"model": "m", "messages": clean})
    broken_raw = orjson.dumps({"model": "m", "messages": broken})
    fast = _interleaved_us(
        {"loads": lambda: orjson.loads(clean_raw), "clean": lambda: engine(clean, policy)},
        rounds=21,
        inner=20,
    )
    slow = _interleaved_us(
        {"loads": lambda: orjson.loads(broken_raw), "broken": lambda: engine(broken, policy)},
        rounds=9,
        inner=5,
    )
    clean_us = statistics.median(fast["clean"])
    broken_us = statistics.median(slow["broken"])
    return {
        "body_kib": len(clean_raw) / 1024,
        "loads_us": statistics.median(fast["loads"]),
        "clean_us": clean_us,
        "clean_us_per_msg": clean_us / len(clean),
        "clean_ratio": _ratio(fast, "clean", "loads"),
        "broken_us": broken_us,
        "broken_us_per_msg": broken_us / len(broken),
        "broken_ratio": _ratio(slow, "broken", "loads"),
    }


def run() -> list[dict[str, Any]]:
    rows = []
    for size, label in ((200, "agent-sized contents"), (20, "20-char contents")):
        for dialect in ("openai", "deepseek", "gemini"):
            rows.append({"dialect": dialect, "contents": label, **measure(dialect, size)})
    return rows


def _log_line() -> Callable[[], object]:
    """One request log line as the proxy writes it (JSON formatter, to a null stream)."""
    import io
    import logging

    from proxy.logs import JsonFormatter, RequestLog

    logger = logging.getLogger("toolcall_guard")
    handler = logging.StreamHandler(io.StringIO())
    handler.setFormatter(JsonFormatter())
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def emit() -> None:
        handler.stream.seek(0)  # keep the buffer small
        log = RequestLog("POST", "/v1/chat/completions", "0123456789abcdef01234567", 0.0)
        log.route, log.upstream, log.model, log.outcome = "chat", "openai", "gpt-4o-mini", "clean"
        log.status, log.end, log.sanitize_ms, log.upstream_ms = 200, "complete", 0.2, 0.3
        log.emit()

    return emit


def hot_path() -> dict[str, float]:
    """µs per call, in this process, of each step the proxy takes on the bench's clean
    200-message chat body, and of digests a prefix cache would have to compute on it."""
    import hashlib

    from bench.bodies import body
    from proxy.api import limits
    from proxy.core.chat.messages import messages_of

    raw = body("history", stream=False)
    policy = build_policy("openai")
    data = orjson.loads(raw)
    messages = messages_of(data)
    steps: dict[str, Callable[[], object]] = {
        "orjson.loads": lambda: orjson.loads(raw),
        "limits.parse (loads + depth bound)": lambda: limits.parse(raw, 64),
        "messages_of": lambda: messages_of(data),
        "sanitizer (engine, clean)": lambda: engine(messages, policy),
        "request log line (JSON)": _log_line(),
        "blake2b digest of the body": lambda: hashlib.blake2b(raw, digest_size=16).digest(),
        "sha1 digest of the body": lambda: hashlib.sha1(raw).digest(),
    }
    samples = _interleaved_us(steps, rounds=15, inner=50)
    return {"body_kib": len(raw) / 1024, **{k: statistics.median(v) for k, v in samples.items()}}


def hot_path_table(cpu_us: float) -> str:
    """:func:`hot_path` as markdown; shares of ``cpu_us``, the proxy's CPU µs per request on
    that body (history · json · c10), when it was measured."""
    figures = hot_path()
    kib = figures.pop("body_kib")
    lines = [
        f"Steps on the clean 200-message chat body ({kib:.0f} KiB), in-process, against "
        f"toolcall-guard's server CPU per request on it (history · json · c10: {cpu_us:.0f} µs):",
        "",
        "| step | µs | share of the proxy's CPU µs/req |",
        "|---|---|---|",
    ]
    for name, us in figures.items():
        lines.append(f"| {name} | {us:.1f} | {us / cpu_us * 100:.1f} % |")
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| preset | contents | body KiB | orjson.loads µs | clean µs (µs/msg) | ratio | "
        "broken µs (µs/msg) | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dialect']} | {r['contents']} | {r['body_kib']:.0f} | {r['loads_us']:.0f} | "
            f"{r['clean_us']:.0f} ({r['clean_us_per_msg']:.2f}) | {r['clean_ratio']:.2f} | "
            f"{r['broken_us']:.0f} ({r['broken_us_per_msg']:.2f}) | {r['broken_ratio']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--hot-path"]:  # python -m bench.sanitize --hot-path [CPU_US]
        print(hot_path_table(float(sys.argv[2]) if len(sys.argv) > 2 else float("nan")))
    else:
        print(table(run()))
