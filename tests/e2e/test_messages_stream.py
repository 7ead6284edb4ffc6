"""Anthropic's SSE stream through the proxy over real sockets (issue 21 §4): every event relayed
unchanged and as it comes (unknown event types too), an ``event: error`` after the 200
recorded, and a client that leaves cancels the upstream request.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import orjson

from tests.e2e.conftest import Proxy
from tests.e2e.test_messages import HEADERS, Start, Upstreams, body

pytest_plugins = ["tests.e2e.test_messages"]

PATH = "/scripted/v1/messages"


def event(kind: str, **data: object) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **data}) + b"\n\n"


START = event("message_start", message={"id": "msg_1", "type": "message", "content": []})
EVENTS = [
    START,
    event("ping"),
    event("future_event_type", anything={"goes": True}),  # unknown types pass as they are
    event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
    event("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hi"}),
    event("content_block_stop", index=0),
    event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 1}),
    event("message_stop"),
]
OVERLOADED = (  # as Anthropic sends it (platform.claude.com messages-streaming)
    b"event: error\n"
    b'data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
)


def test_events_are_relayed_unchanged_and_as_they_come(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    messages_upstreams.scripted.events = EVENTS
    gate = messages_upstreams.scripted.gate = (
        threading.Event()
    )  # the rest waits for the first's arrival
    headers = {"content-type": "application/json", **HEADERS}
    content = orjson.dumps(body(stream=True))
    received = b""
    with proxy.http.stream("POST", proxy.url + PATH, content=content, headers=headers) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        for chunk in answer.iter_raw():
            received += chunk
            if received.endswith(START):
                gate.set()  # the first event came through alone: nothing was buffered
    assert gate.is_set()
    assert received == b"".join(EVENTS)


def test_an_error_event_after_the_200_is_recorded(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    messages_upstreams.scripted.events = [START, OVERLOADED]
    headers = {"content-type": "application/json", **HEADERS}
    content = orjson.dumps(body(stream=True))
    answer = proxy.http.post(proxy.url + PATH, content=content, headers=headers)
    assert answer.status_code == 200
    assert answer.content == START + OVERLOADED
    record = _latest_record(proxy)
    assert record["outcome"] == "upstream_rejected"
    assert record["upstream_status"] == 200
    assert record["upstream_error_kind"] == "overloaded_error"
    assert "Overloaded" in record["upstream_error"]


def test_a_client_that_leaves_cancels_the_upstream(
    messages_proxy: Start, messages_upstreams: Upstreams
) -> None:
    proxy = messages_proxy()
    messages_upstreams.scripted.events = EVENTS
    messages_upstreams.scripted.gate = (
        threading.Event()
    )  # never set: the upstream holds the rest back
    headers = {"content-type": "application/json", **HEADERS}
    content = orjson.dumps(body(stream=True))
    with proxy.http.stream("POST", proxy.url + PATH, content=content, headers=headers) as answer:
        first = next(answer.iter_raw())
        assert first.startswith(b"event: message_start")
    # Leaving the block closed the connection: the proxy must close its upstream request.
    assert messages_upstreams.scripted.disconnected.wait(5.0)


def _latest_record(proxy: Proxy) -> dict[str, Any]:
    """The newest record, once the writer has it (bounded wait)."""
    url = proxy.url
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        page = proxy.http.get(url + "/repairs", params={"limit": 1}).json()
        if page["data"]:
            record_id = page["data"][0]["id"]
            return proxy.http.get(f"{url}/repairs/{record_id}").json()  # type: ignore[no-any-return]
        time.sleep(0.02)
    raise AssertionError("no record within 5 s")
