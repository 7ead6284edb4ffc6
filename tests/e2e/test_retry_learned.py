"""Learned field strips over real sockets: a field an upstream refused (Groq's ``property 'X' is
unsupported``, Mistral's ``extra_forbidden``) for two distinct requests is stripped up front on
the next request for that upstream and model, listed at ``GET /repairs/learned``, forgotten by
``DELETE``, and expires (issue 15 item 4; repair-on-reject.md C2 bound 8; issue 24 item 1).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Proxy, Upstream
from tests.e2e.test_retry_helpers import (
    RECORD,
    RETRIED,
    Guarded,
    assert_retried_once,
    posts,
    rules_of,
    stored,
)

pytest_plugins = ["tests.e2e.test_retry_helpers"]

FIELD = "messages[*].refusal"


def history(turn: int) -> list[dict[str, Any]]:
    """A tool turn whose assistant message carries ``refusal: null`` (as the OpenAI SDK's
    ``model_dump()`` of a reply does); ids valid for Mistral (9 alphanumerics)."""
    call_id = f"call{turn:05d}"
    call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"Step {turn}"},
        {"role": "assistant", "content": None, "tool_calls": [call], "refusal": None},
        {"role": "tool", "tool_call_id": call_id, "content": "ok"},
    ]


def ask(guard: Proxy, model: str, turn: int) -> Any:
    return guard.http.post(
        guard.v1 + "/chat/completions", json={"model": model, "messages": history(turn)}
    )


def learned(guard: Proxy) -> list[dict[str, Any]]:
    response = guard.http.get(guard.url + "/repairs/learned")
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


PROVIDERS = [
    pytest.param("groq", "llama-3.3-70b-versatile", 400, id="groq-unsupported-property"),
    pytest.param("mistral", "mistral-large-latest", 422, id="mistral-extra-forbidden"),
]


@pytest.mark.parametrize(("provider", "model", "refused"), PROVIDERS)
def test_a_refused_field_is_learned_stripped_up_front_and_forgotten(
    guarded: Guarded, emulated: dict[str, Upstream], provider: str, model: str, refused: int
) -> None:
    guard = guarded(provider)
    upstream = emulated[provider]
    assert learned(guard) == []

    first = ask(guard, model, 1)
    assert_retried_once(guard, upstream, first, "unknown_message_field", refused)
    [entry] = learned(guard)
    assert (entry["upstream"], entry["model"], entry["field"]) == (provider, model, FIELD)
    assert (entry["applied"], entry["confirmations"], entry["confirmed"]) == (0, 1, False)
    assert "refusal" in entry["evidence"]

    # one refused request teaches nobody else: a second, distinct one confirms it
    upstream.received.clear()
    confirming = ask(guard, model, 5)
    assert_retried_once(guard, upstream, confirming, "unknown_message_field", refused)
    [entry] = learned(guard)
    assert (entry["confirmations"], entry["confirmed"]) == (2, True)

    upstream.received.clear()
    second = ask(guard, model, 2)
    assert second.status_code == 200, second.text
    assert RETRIED not in second.headers
    [sent] = posts(upstream)  # one request: stripped before it went
    assert "refusal" not in sent["messages"][1]
    record = stored(guard, second.headers[RECORD])
    assert record["outcome"] == "repaired"
    assert rules_of(record) == ["learned_field_strip"]
    assert record["findings"][0]["path"] == "messages[1].refusal"
    assert record["attempts"] is None
    assert learned(guard)[0]["applied"] == 1

    # another model of the same upstream learned nothing: it pays its own retry
    if provider == "groq":
        upstream.received.clear()
        other = ask(guard, "qwen/qwen3-32b", 3)
        assert other.headers[RETRIED] == "unknown_message_field"
        assert len(posts(upstream)) == 2

    deleted = guard.http.delete(guard.url + "/repairs/learned")
    assert deleted.status_code == 200
    assert deleted.json() == {"deleted": 2 if provider == "groq" else 1}
    assert learned(guard) == []
    upstream.received.clear()
    again = ask(guard, model, 4)
    assert again.headers[RETRIED] == "unknown_message_field"
    assert len(posts(upstream)) == 2


def test_a_learned_strip_expires(guarded: Guarded, emulated: dict[str, Upstream]) -> None:
    """The store's clock is injected: no sleeping, the entry's ttl passes at once."""
    guard = guarded("groq")
    upstream = emulated["groq"]
    store = guard.app.state.learned
    now = [1_000_000.0]
    store.clock = lambda: now[0]
    model = "llama-3.3-70b-versatile"

    for turn in (1, 5):  # two distinct refused requests confirm it
        assert ask(guard, model, turn).headers[RETRIED] == "unknown_message_field"
    assert [e["field"] for e in learned(guard)] == [FIELD]

    now[0] += store.ttl - 1  # still learned: stripped up front
    upstream.received.clear()
    assert RETRIED not in ask(guard, model, 2).headers
    assert len(posts(upstream)) == 1

    now[0] += 1  # expired: gone from the list, and the next request is refused and retried
    assert learned(guard) == []
    upstream.received.clear()
    assert ask(guard, model, 3).headers[RETRIED] == "unknown_message_field"
    assert len(posts(upstream)) == 2
