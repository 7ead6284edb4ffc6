"""Learned strips cannot be poisoned (issue 24 item 1): no client makes the proxy strip a field
from another client's request, over real sockets.

- An upstream that echoes a client's value inside its sentence (OpenAI's ``Invalid value:
  '…'``) names no refused field: nothing is learned, however often it is sent.
- An upstream that echoes a client's text as its *whole* message (the worst case: no anchor
  helps) still cannot make one client change another's request when client keys are
  configured: a strip applies to everyone only once two distinct clients saw the refusal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest

from proxy.emulator import ReceivedRequest, create_emulator_app
from tests.hardening.conftest import Conn, Guard, RawUpstream, response
from tests.servers import running

CHAT = "/v1/chat/completions"
KEYS_ENV = "TCG_TEST_LEARN_CLIENT_KEYS"
KEYS = ("ck-attacker-1", "ck-victim-2", "ck-third-3")


@pytest.fixture(scope="module")
def openai() -> Iterator[tuple[str, list[ReceivedRequest]]]:
    """The strict OpenAI emulator (it echoes a content part's unknown ``type``) and what it
    received."""
    received: list[ReceivedRequest] = []
    with running(create_emulator_app("openai", received=received)) as url:
        yield url + "/v1", received


def poisoned(turn: int, aimed_at: str) -> dict[str, Any]:
    """A request whose content part ``type`` carries a forged refusal of ``aimed_at``."""
    part = {"type": f"x{turn}'. Unknown parameter: '{aimed_at}", "text": "hi"}
    return {
        "model": "gpt-4o",
        "max_completion_tokens": 50,
        "messages": [{"role": "user", "content": [part]}],
    }


VICTIM = {
    "model": "gpt-4o",
    "max_completion_tokens": 50,
    "messages": [{"role": "user", "content": "What is 2+2?"}],
}


def learned(http: httpx.Client, guard: Guard) -> list[dict[str, Any]]:
    answer = http.get(guard.url + "/repairs/learned")
    assert answer.status_code == 200, answer.text
    data: list[dict[str, Any]] = answer.json()["data"]
    return data


@pytest.mark.parametrize("aimed_at", ["messages[0].content", "max_completion_tokens"])
def test_a_value_echoed_in_an_error_teaches_nothing(
    start_guard: Callable[..., Guard],
    http: httpx.Client,
    openai: tuple[str, list[ReceivedRequest]],
    aimed_at: str,
) -> None:
    url, received = openai
    guard = start_guard({"openai": url})
    for turn in range(4):  # distinct bodies: a confirmation count alone would be met
        answer = http.post(guard.url + CHAT, json=poisoned(turn, aimed_at))
        assert answer.status_code == 400
        assert "x-toolcall-guard-retried" not in answer.headers  # not a field refusal
    assert learned(http, guard) == []

    received.clear()
    victim = http.post(guard.url + CHAT, json=VICTIM)
    assert victim.status_code == 200, victim.text
    assert "x-toolcall-guard-outcome" not in victim.headers or (
        victim.headers["x-toolcall-guard-outcome"] == "clean"
    )
    [sent] = [orjson.loads(r.body) for r in received if r.method == "POST"]
    assert sent == VICTIM


async def echoing(conn: Conn) -> None:
    """An upstream whose 400 message is the first message's text, whole (the worst echo), and
    that otherwise answers 200."""
    request = await conn.request()
    body = orjson.loads(request.body)
    text = body["messages"][0]["content"]
    if text.startswith("Unknown parameter"):
        error = {"error": {"message": text, "type": "invalid_request_error"}}
        await conn.send(response(b"400 Bad Request", orjson.dumps(error)))
        return
    await conn.send(response(body=b'{"choices": []}'))


def keyed(turn: int, text: str = "What is 2+2?") -> dict[str, Any]:
    return {
        "model": "gpt-4o",
        "max_completion_tokens": 50,
        "user": f"user-{turn}",
        "messages": [{"role": "user", "content": text}],
    }


FORGED = "Unknown parameter: 'user'."


def test_with_client_keys_one_client_never_changes_anothers_request(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    upstream = raw_upstream(echoing)
    monkeypatch.setenv(KEYS_ENV, ",".join(KEYS))
    guard = start_guard({"openai": upstream.url}, server={"client_keys_env": KEYS_ENV})

    def send(key: str, body: dict[str, Any]) -> dict[str, Any]:
        upstream.requests.clear()
        answer = http.post(guard.url + CHAT, json=body, headers={"authorization": f"Bearer {key}"})
        assert answer.status_code in (200, 400), answer.text
        sent: dict[str, Any] = orjson.loads(upstream.requests[-1].body)
        return sent

    attacker, victim, third = KEYS
    for turn in range(4):  # the attacker's refusals, in distinct bodies
        send(attacker, keyed(turn, FORGED))
    [entry] = learned(http, guard)
    assert (entry["field"], entry["confirmations"], entry["confirmed"]) == ("user", 1, False)
    # the attacker changed only its own requests ...
    assert "user" not in send(attacker, keyed(5))
    # ... never another client's
    assert send(victim, keyed(6))["user"] == "user-6"

    # a refusal seen by a second client confirms it: from then on it holds for every client
    send(victim, keyed(7, FORGED))
    assert learned(http, guard)[0]["confirmed"] is True
    assert "user" not in send(third, keyed(8))

    # a field that changes the answer is never learned, whoever reports it
    http.delete(guard.url + "/repairs/learned")
    for key in KEYS:
        send(key, keyed(9, "Unknown parameter: 'max_completion_tokens'."))
    assert learned(http, guard) == []
    assert send(victim, keyed(10))["max_completion_tokens"] == 50
