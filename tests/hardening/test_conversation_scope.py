"""No client can count its turns on another client's conversation (issue 23's trust caveat).

The conversation key comes from the body, which the client writes: a client that copies the
start of another's history (or its session id) would otherwise see its repaired turns counted as
repeats on the other's first record. With client keys configured, the key is scoped by the
client key that sent the request, and by the upstream; over real sockets, through the strict
OpenAI emulator.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from proxy.emulator import create_emulator_app
from tests.hardening.conftest import ORPHAN, Guard
from tests.servers import running

KEYS_ENV = "TCG_TEST_SCOPE_CLIENT_KEYS"
ADMIN_ENV = "TCG_TEST_SCOPE_ADMIN_TOKEN"
OWNER, COPYCAT, ADMIN = "ck-owner-1", "ck-copycat-2", "admin-token-3"


@pytest.fixture(scope="module")
def openai() -> Iterator[str]:
    with running(create_emulator_app("openai")) as url:
        yield url + "/v1"


def _turn(n: int) -> dict[str, Any]:
    """Turn ``n`` of one broken conversation: its start (a lost call), then n more exchanges."""
    history = list(ORPHAN)
    for k in range(n):
        history += [
            {"role": "user", "content": f"and step {k}?"},
            {"role": "assistant", "content": f"step {k} done"},
        ]
    return {"model": "gpt-4o", "messages": [*history, {"role": "user", "content": "next"}]}


def _records(http: httpx.Client, guard: Guard, count: int) -> list[dict[str, Any]]:
    """The first records listed, once ``count`` records were written (bounded wait)."""
    deadline = time.monotonic() + 10
    while guard.app.state.writer.health.written < count:
        assert time.monotonic() < deadline, "records were never written"
        time.sleep(0.02)
    admin = {"authorization": f"Bearer {ADMIN}"}  # every client's records (issue 35)
    rows: list[dict[str, Any]] = http.get(guard.url + "/repairs", headers=admin).json()["data"]
    return rows


def test_a_copied_conversation_start_is_a_conversation_of_its_own(
    start_guard: Callable[..., Guard],
    openai: str,
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEYS_ENV, f"{OWNER},{COPYCAT}")
    monkeypatch.setenv(ADMIN_ENV, ADMIN)
    guard = start_guard(
        {"openai": openai},
        server={"client_keys_env": KEYS_ENV, "admin_token_env": ADMIN_ENV},
        repair_log_settings={"url": "memory://", "flush_interval": 0.05},
    )

    def send(key: str, n: int) -> str:
        answer = http.post(
            guard.v1 + "/chat/completions",
            json=_turn(n),
            headers={"authorization": f"Bearer {key}"},
        )
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-toolcall-guard-outcome"] == "repaired"
        return answer.headers["x-toolcall-guard-record"]

    owners = [send(OWNER, n) for n in range(2)]
    copies = [send(COPYCAT, n) for n in range(3)]  # the very same bodies, another client key
    rows = {row["id"]: row for row in _records(http, guard, 5)}
    assert set(rows) == {owners[0], copies[0]}  # two conversations, one row each
    assert rows[owners[0]]["repeats"] == 1  # the owner's own later turn, not the copies
    assert rows[copies[0]]["repeats"] == 2
    assert rows[owners[0]]["conversation"] != rows[copies[0]]["conversation"]
    mine = {"authorization": f"Bearer {COPYCAT}"}  # and each client key reads its own only
    listed = http.get(guard.url + "/repairs", headers=mine).json()["data"]
    assert [row["id"] for row in listed] == [copies[0]]
