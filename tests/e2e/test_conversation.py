"""A broken conversation costs what is new (issue 23), through a real proxy and SQLite log.

An agent that lost an assistant message's ``tool_calls`` at the start of its conversation
(seed 000) resends that broken history, a few messages longer, on every later turn. Every turn
is repaired and recorded; the log must grow by what each turn adds, not by the whole history.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.e2e.conftest import Proxy, Upstream
from tests.e2e.test_records import stored

TURNS = 60
FILE = "".join(f"line {n}: value = {n * 7919 % 10007}\n" for n in range(40))  # ~1 KB


def _turn(history: list[dict[str, Any]], n: int) -> None:
    """One agent turn: a user message, a tool call, its result."""
    call = f"call_{n:03d}"
    history += [
        {"role": "user", "content": f"Step {n}: read src/module_{n}.py and summarise it."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": f'{{"path": "m{n}.py"}}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": FILE},
    ]


def _broken_start() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a coding agent. Use the tools you are given."},
        {"role": "user", "content": "Read config.py"},
        {"role": "assistant", "content": ""},  # seed 000: saved without its tool_calls
        {"role": "tool", "tool_call_id": "call_lost", "content": "port = 8080"},
    ]


def _log_bytes(path: Path) -> int:
    """The SQLite log's size on disk once its write-ahead log is checkpointed into it."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size + (path.with_name(path.name + "-wal").stat().st_size)


def _wait_written(http: httpx.Client, proxy: Proxy, count: int) -> None:
    """Until the writer wrote ``count`` records (bounded wait)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proxy.app.state.writer.health.written >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{count} records were never written")


def test_a_sixty_turn_broken_conversation_costs_what_is_new(
    start_proxy: Callable[..., Proxy],
    upstreams: dict[str, Upstream],
    http: httpx.Client,
    tmp_path: Path,
) -> None:
    path = tmp_path / "repairs.sqlite3"
    proxy = start_proxy(
        {"openai": upstreams["openai"].url}, repair_log={"url": f"sqlite:///{path}"}
    )
    history = _broken_start()
    ids = []
    for n in range(TURNS):
        _turn(history, n)
        body = {"model": "gpt-4o", "messages": history}
        response = proxy.chat(body)
        assert response.status_code == 200, response.text
        assert response.headers["x-toolcall-guard-outcome"] == "repaired"
        ids.append(response.headers["x-toolcall-guard-record"])
    final = orjson.dumps(body)
    _wait_written(http, proxy, TURNS)

    last = stored(proxy, ids[-1])
    first = stored(proxy, ids[0])
    assert last["received"] == body  # received exactly as sent
    assert last["forwarded"] == orjson.loads(upstreams["openai"].chats()[-1].body)
    assert last["repeat_of"] == ids[0]
    assert all(stored(proxy, i)["repeat_of"] == ids[0] for i in ids[1:3])

    grouped = http.get(f"{proxy.url}/repairs").json()["data"]  # one row per conversation
    assert [row["id"] for row in grouped] == [ids[0]]
    assert grouped[0]["repeats"] == first["repeats"] == TURNS - 1
    turns = http.get(
        f"{proxy.url}/repairs", params={"conversation": first["conversation"], "limit": 500}
    ).json()["data"]
    assert len(turns) == TURNS

    size = _log_bytes(path)
    print(f"\n60 turns: final body {len(final)} B, repair log {size} B ({size / len(final):.2f}x)")
    assert size <= 3 * len(final), f"the log holds {size / len(final):.1f}x the final body"
