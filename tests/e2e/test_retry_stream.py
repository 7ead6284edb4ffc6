"""Repair on reject and streams: a refused first attempt is retried and the client gets a proper
SSE stream; an answer that already started, or a 5xx, is never retried (repair-on-reject.md C2
bounds 2 and 5), even when it carries a catalogued text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import orjson
import pytest

from tests.e2e.conftest import Proxy, Upstream
from tests.e2e.test_retry_helpers import RECORD, RETRIED, Guarded, assert_retried_once, metric
from tests.servers import running

pytest_plugins = ["tests.e2e.test_retry_helpers"]

#: DeepSeek's D4, a catalogued refusal a retry would repair.
D4 = "The `reasoning_content` in the thinking mode must be passed back to the API."
CALL = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
THINKING = [
    {"role": "user", "content": "Read a.txt"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
    {"role": "user", "content": "And b.txt?"},
]
BODY = {"model": "deepseek-reasoner", "messages": THINKING}


def test_a_refused_stream_is_retried_and_streamed(
    guarded: Guarded, emulated: dict[str, Upstream]
) -> None:
    guard = guarded("deepseek")
    with guard.http.stream(
        "POST", guard.v1 + "/chat/completions", json=BODY | {"stream": True}
    ) as r:
        chunks = list(r.iter_bytes())
        response = r
    assert response.headers["content-type"].startswith("text/event-stream")
    record, sent = assert_retried_once(
        guard, emulated["deepseek"], response, "missing_reasoning_content", 400
    )
    assert all(body["stream"] is True for body in sent)
    events = [e for e in b"".join(chunks).split(b"\n\n") if e.strip()]
    assert len(events) > 2
    assert events[-1] == b"data: [DONE]"
    payloads = [orjson.loads(e.removeprefix(b"data: ")) for e in events[:-1]]
    assert all(p["object"] == "chat.completion.chunk" for p in payloads)
    assert record["stream"] is True


class Scripted:
    """An upstream answering every request with ``status`` and the given body parts, in order;
    counts the requests."""

    def __init__(self, status: int, content_type: bytes, parts: list[bytes]) -> None:
        self.status, self.content_type, self.parts = status, content_type, parts
        self.requests = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        self.requests += 1
        headers = [(b"content-type", self.content_type)]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        for part in self.parts:
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture
def scripted(start_proxy: Callable[..., Proxy]) -> Iterator[Callable[[Scripted], Proxy]]:
    """``scripted(upstream)``: a proxy (openai preset) whose only upstream is ``upstream``."""
    with ExitStack() as stack:

        def start(upstream: Scripted) -> Proxy:
            url = stack.enter_context(running(upstream))
            return start_proxy(
                {"deepseek": url + "/v1"},
                routing={"default": "deepseek"},
                upstream_overrides={"policy": "openai"},
            )

        yield start


def _error(message: str) -> bytes:
    return orjson.dumps({"error": {"message": message, "type": "invalid_request_error"}})


def test_a_stream_that_started_is_never_retried(scripted: Callable[[Scripted], Proxy]) -> None:
    """The upstream fails mid-stream with a catalogued text: the client already has bytes, so
    what follows is relayed as it comes, never retried."""
    first = b'data: {"object":"chat.completion.chunk","choices":[]}\n\n'
    failure = b"data: " + _error(D4) + b"\n\n"
    upstream = Scripted(200, b"text/event-stream", [first, failure])
    guard = scripted(upstream)
    retries = metric(guard, "toolcall_guard_retries_total", upstream="deepseek")

    response = guard.http.post(guard.v1 + "/chat/completions", json=BODY | {"stream": True})

    assert response.status_code == 200
    assert response.content == first + failure
    assert RETRIED not in response.headers
    assert upstream.requests == 1
    assert metric(guard, "toolcall_guard_retries_total", upstream="deepseek") == retries


def test_a_server_error_is_never_retried_even_with_a_catalogued_text(
    scripted: Callable[[Scripted], Proxy],
) -> None:
    upstream = Scripted(500, b"application/json", [_error(D4)])
    guard = scripted(upstream)

    response = guard.http.post(guard.v1 + "/chat/completions", json=BODY)

    assert response.status_code == 500
    assert response.json()["error"]["message"] == D4
    assert RETRIED not in response.headers
    assert RECORD not in response.headers
    assert upstream.requests == 1


def test_the_same_refusal_as_422_is_retried(scripted: Callable[[Scripted], Proxy]) -> None:
    """The control of the two tests above: the scripted upstream's refusal is retryable when it
    comes whole, as a 4xx, before any byte (then refused again: relayed, one retry only)."""
    upstream = Scripted(422, b"application/json", [_error(D4)])
    guard = scripted(upstream)

    response = guard.http.post(guard.v1 + "/chat/completions", json=BODY)

    assert response.status_code == 422
    assert response.headers[RETRIED] == "missing_reasoning_content"
    assert upstream.requests == 2
