"""Anthropic's SSE through the proxy (issue 21 item 4): an event type no one knows and an
``event: error`` after the 200 reach the client unchanged, and the SDK sees the error."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from proxy.emulator.messages import messages_reply
from proxy.emulator.messages_events import stream_knobs
from tests.clients.conftest import TIMEOUT, require
from tests.clients.messages_guard import ASK, CLIENT_KEY, READ_FILE, SYSTEM, MessagesGuard

MODEL = "claude-sonnet-4-6"
BODY = {"model": MODEL, "max_tokens": 1024, "system": SYSTEM, "tools": [READ_FILE],
        "messages": [{"role": "user", "content": ASK}], "stream": True}  # fmt: skip
KNOBS = [{"x-emulator-stream-extra": "1"}, {"x-emulator-stream-error": "overloaded_error"}]


@pytest.mark.parametrize("knob", KNOBS, ids=["unknown-event", "error-event"])
def test_events_are_relayed_unchanged(mguard: MessagesGuard, knob: dict[str, str]) -> None:
    raw = orjson.dumps(BODY)
    headers = {"content-type": "application/json", "x-api-key": CLIENT_KEY, **knob}
    with httpx.Client(timeout=TIMEOUT) as http:
        answer = http.post(mguard.url + "/v1/messages", content=raw, headers=headers)
    assert answer.status_code == 200
    assert answer.headers["x-toolcall-guard-outcome"] == "clean"
    frames = messages_reply("anthropic", raw, None)
    assert isinstance(frames, list)
    assert answer.content == b"".join(stream_knobs(frames, knob))


def test_the_sdk_raises_the_streamed_error(mguard: MessagesGuard) -> None:
    anthropic = require("anthropic")
    client = anthropic.Anthropic(
        base_url=mguard.url, api_key=CLIENT_KEY, timeout=TIMEOUT, max_retries=0
    )
    params: dict[str, Any] = {k: v for k, v in BODY.items() if k != "stream"}
    stream = client.messages.stream(**params, extra_headers=KNOBS[1])
    with pytest.raises(anthropic.APIStatusError) as caught, stream as events:
        events.get_final_message()
    assert "Overloaded" in str(caught.value)
