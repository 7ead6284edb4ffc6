"""Learned strips shared by a fleet (issue 23 item 4): two proxies on one PostgreSQL repair log.

A field the Groq emulator refuses, confirmed by two distinct refused requests on replica A, is
stripped up front by replica B within 5 s, without B ever being refused; ``DELETE
/repairs/learned`` on B makes A forget it too. Real sockets, a real PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest

from proxy.emulator import ReceivedRequest, create_emulator_app
from tests.hardening.conftest import Guard, eventually
from tests.servers import running

MODEL = "llama-3.3-70b-versatile"
FIELD = "messages[*].refusal"
RETRIED = "x-toolcall-guard-retried"


@pytest.fixture(scope="module")
def groq() -> Iterator[tuple[str, list[ReceivedRequest]]]:
    received: list[ReceivedRequest] = []
    with running(create_emulator_app("groq", received=received)) as url:
        yield url + "/openai/v1", received


def ask(http: httpx.Client, guard: Guard, turn: int) -> httpx.Response:
    """A tool turn whose assistant message carries ``refusal: null`` (Groq refuses it)."""
    call_id = f"call{turn:05d}"
    call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": f"Step {turn}"},
        {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None},
        {"role": "tool", "tool_call_id": call_id, "content": "ok"},
    ]
    return http.post(
        guard.url + "/v1/chat/completions", json={"model": MODEL, "messages": messages}
    )


def learned(http: httpx.Client, guard: Guard) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = http.get(guard.url + "/repairs/learned").json()["data"]
    return data


def test_a_strip_learned_by_one_replica_is_applied_by_the_other_within_5_s(
    start_guard: Callable[..., Guard],
    http: httpx.Client,
    pg_url: str,
    groq: tuple[str, list[ReceivedRequest]],
) -> None:
    url, received = groq
    shared_log = {"url": pg_url, "flush_interval": 0.05}
    first, second = (
        start_guard(
            {"groq": url},
            routing={"default": "groq"},
            upstream_overrides={"policy": "openai"},  # the groq preset strips it up front
            repair_log_settings=shared_log,
        )
        for _ in range(2)
    )
    for turn in (1, 2):  # two distinct refused requests confirm it on the first replica
        assert ask(http, first, turn).headers[RETRIED] == "unknown_message_field"
    [entry] = learned(http, first)
    assert (entry["field"], entry["confirmed"]) == (FIELD, True)

    eventually(lambda: [e["confirmed"] for e in learned(http, second)] == [True], within=5.0)
    received.clear()
    answer = ask(http, second, 3)
    assert answer.status_code == 200, answer.text
    assert RETRIED not in answer.headers  # stripped up front: the second replica paid nothing
    [sent] = [orjson.loads(r.body) for r in received if r.method == "POST"]
    assert "refusal" not in sent["messages"][1]

    # forgotten on one replica, forgotten by the fleet
    assert http.delete(second.url + "/repairs/learned").status_code == 200
    eventually(lambda: learned(http, first) == [], within=5.0)
    assert ask(http, first, 4).headers[RETRIED] == "unknown_message_field"


def test_one_report_per_replica_is_not_a_confirmation_by_two_clients(
    start_guard: Callable[..., Guard],
    http: httpx.Client,
    pg_url: str,
    groq: tuple[str, list[ReceivedRequest]],
) -> None:
    """The same refused body on two replicas is one reporter: still pending everywhere."""
    url, _ = groq
    shared_log = {"url": pg_url, "flush_interval": 0.05}
    first, second = (
        start_guard(
            {"groq": url},
            routing={"default": "groq"},
            upstream_overrides={"policy": "openai"},  # the groq preset strips it up front
            repair_log_settings=shared_log,
        )
        for _ in range(2)
    )
    assert ask(http, first, 1).headers[RETRIED] == "unknown_message_field"
    assert ask(http, second, 1).headers[RETRIED] == "unknown_message_field"
    shared = second.app.state.learned_shared
    rounds = shared.rounds
    eventually(lambda: shared.rounds >= rounds + 2, within=5.0, what="two sync rounds")
    for guard in (first, second):
        [entry] = learned(http, guard)
        assert (entry["confirmations"], entry["confirmed"]) == (1, False)
