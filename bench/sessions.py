"""Agent sessions (issue 23): what a conversation costs when its history broke at its start.

``SESSIONS`` conversations run at once, each sending ``TURNS`` turns one after the other; a
turn is the previous history plus a user message, an assistant tool call and its result, as an
agent resends it. Half the conversations (each round alternately all clean, all broken) lost
the ``tool_calls`` of their first assistant message (seed 000), so toolcall-guard repairs and
records every one of their turns. The figures: toolcall-guard's CPU per request, clean and
broken, and the repair log's growth per broken conversation against its final body.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

from bench.servers import Server

SESSIONS = 8
TURNS = 30
#: A tool's output, ~1 KB of source-like lines (a file read).
FILE = "".join(f"    value_{n} = compute({n}, scale={n * 7919 % 10007})\n" for n in range(20))


def _start(broken: bool, session: str) -> list[dict[str, Any]]:
    call: dict[str, Any] = {"id": "call_cfg", "type": "function"}
    call["function"] = {"name": "read_file", "arguments": '{"path": "config.py"}'}
    assistant: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
    if broken:
        assistant = {"role": "assistant", "content": ""}  # tool_calls lost when it was saved
    return [
        {"role": "system", "content": f"You are coding agent {session}. Use the tools."},
        {"role": "user", "content": "Read config.py"},
        assistant,
        {"role": "tool", "tool_call_id": "call_cfg", "content": "port = 8080"},
    ]


def conversation(
    broken: bool, session: str, turns: int = TURNS, model: str = "gpt-4o-mini"
) -> list[bytes]:
    """The request bodies of one conversation, turn by turn."""
    history = _start(broken, session)
    out = []
    for n in range(turns):
        call: dict[str, Any] = {"id": f"call_{n:03d}", "type": "function"}
        call["function"] = {"name": "read_file", "arguments": f'{{"path": "src/m{n}.py"}}'}
        history += [
            {"role": "user", "content": f"Step {n}: read src/m{n}.py and summarise it."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": FILE},
        ]
        out.append(orjson.dumps({"model": model, "messages": history}))
    return out


async def _drive(url: str, sessions: list[list[bytes]]) -> int:
    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession() as http:

        async def one(turns: list[bytes]) -> int:
            for body in turns:
                async with http.post(url, data=body, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"turn answered {response.status}")
            return len(turns)

        return sum(await asyncio.gather(*(one(turns) for turns in sessions)))


def _stored(path: Path) -> tuple[int, int]:
    """(records and turns written, bytes on disk once checkpointed) of the SQLite log."""
    if not path.exists():
        return 0, 0
    with sqlite3.connect(path) as conn:
        count = conn.execute(
            "SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM turns)"
        ).fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = path.with_name(path.name + "-wal")
    return int(count), path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _written(path: Path, count: int, timeout: float = 30.0) -> int:
    """Wait (bounded) until the log holds ``count`` records; its size then."""
    deadline = time.monotonic() + timeout
    while True:
        stored, size = _stored(path)
        if stored >= count or time.monotonic() > deadline:
            return size
        time.sleep(0.1)


def run(guard: Server, repair_log: str, rounds: int) -> dict[str, Any]:
    """Interleaved rounds of clean and broken sessions against ``guard``; medians."""
    path = Path(repair_log.removeprefix("sqlite:///")) if repair_log.startswith("sqlite") else None
    url = guard.url + "/v1/chat/completions"
    cpu: dict[str, list[float]] = {"clean": [], "broken": []}
    growth: list[float] = []
    final = 0
    for n in range(rounds):
        for kind in ("clean", "broken"):
            sessions = [conversation(kind == "broken", f"{n}-{kind}-{i}") for i in range(SESSIONS)]
            final = len(sessions[0][-1])
            before = _stored(path) if path is not None else (0, 0)
            started = guard.cpu_seconds()
            requests = uvloop.run(_drive(url, sessions))
            expected = before[0] + (requests if kind == "broken" else 0)
            size = _written(path, expected) if path is not None else 0
            cpu[kind].append((guard.cpu_seconds() - started) / requests * 1e6)
            if kind == "broken" and path is not None:
                growth.append((size - before[1]) / SESSIONS)
    clean, broken = statistics.median(cpu["clean"]), statistics.median(cpu["broken"])
    per_conversation = statistics.median(growth) if growth else 0.0
    return {
        "sessions": SESSIONS,
        "turns": TURNS,
        "clean_cpu_us": clean,
        "broken_cpu_us": broken,
        "ratio": broken / clean if clean else 0.0,
        "log_bytes_per_conversation": per_conversation,
        "final_body_bytes": final,
    }


def table(figures: dict[str, Any]) -> str:
    """The agent-session figures as a Markdown table."""
    if not figures:
        return "(toolcall-guard not measured)"
    return "\n".join(
        [
            "| figure | value |",
            "|---|---|",
            f"| CPU µs per request, clean conversations | {figures['clean_cpu_us']:.0f} |",
            f"| CPU µs per request, broken at turn 1 | {figures['broken_cpu_us']:.0f} |",
            f"| broken ÷ clean | {figures['ratio']:.2f} |",
            "| repair-log bytes per broken conversation | "
            f"{figures['log_bytes_per_conversation']:.0f} |",
            f"| final body of a conversation (bytes) | {figures['final_body_bytes']} |",
            "| log bytes ÷ final body | "
            f"{figures['log_bytes_per_conversation'] / max(figures['final_body_bytes'], 1):.2f} |",
        ]
    )
