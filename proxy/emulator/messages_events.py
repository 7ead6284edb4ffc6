"""The wire form of an emulated Messages answer: the Message object, or its SSE events.

Streams follow Anthropic's event order (``messages-streaming``): ``message_start``, per block
``content_block_start`` (a ``ping`` after the first), deltas (``text_delta``,
``thinking_delta`` then ``signature_delta``, ``input_json_delta``), ``content_block_stop``,
``message_delta``, ``message_stop``. Test knobs cut a stream with an ``event: error`` or slip
an unknown event in (:func:`stream_knobs`).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from proxy.emulator.completion import split
from proxy.emulator.messages_answer import Reply


def message_json(reply: Reply, *, streaming: bool = False) -> dict[str, Any]:
    """The Message object (empty content and no stop reason as ``message_start`` carries it)."""
    return {
        "id": reply.id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": [] if streaming else reply.blocks,
        "stop_reason": None if streaming else reply.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1 if streaming else reply.output_tokens,
        },
    }


def message_body(reply: Reply) -> bytes:
    return orjson.dumps(message_json(reply))


def _event(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def message_events(reply: Reply, chunks: int | None) -> list[bytes]:
    """The SSE frames of the streamed answer."""
    frames = [
        _event(
            "message_start",
            {"type": "message_start", "message": message_json(reply, streaming=True)},
        )
    ]
    for index, block in enumerate(reply.blocks):
        frames.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": _opening(block)},
            )
        )
        if index == 0:
            frames.append(PING)
        frames += [
            _event(
                "content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}
            )
            for d in _deltas(block, chunks)
        ]
        frames.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": reply.stop_reason, "stop_sequence": None}
    usage = {"output_tokens": reply.output_tokens}
    frames.append(
        _event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage})
    )
    frames.append(_event("message_stop", {"type": "message_stop"}))
    return frames


def _opening(block: dict[str, Any]) -> dict[str, Any]:
    if block["type"] == "text":
        return {"type": "text", "text": ""}
    if block["type"] == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}


def _deltas(block: dict[str, Any], chunks: int | None) -> list[dict[str, Any]]:
    if block["type"] == "text":
        return [{"type": "text_delta", "text": p} for p in split(block["text"], chunks)]
    if block["type"] == "thinking":
        pieces = [
            {"type": "thinking_delta", "thinking": p} for p in split(block["thinking"], chunks)
        ]
        return [*pieces, {"type": "signature_delta", "signature": block["signature"]}]
    arguments = json.dumps(block["input"], ensure_ascii=False)
    return [{"type": "input_json_delta", "partial_json": p} for p in split(arguments, chunks or 2)]


#: What Anthropic streams for an error after the 200 (platform.claude.com messages-streaming).
STREAM_ERRORS = {"overloaded_error": "Overloaded", "api_error": "Internal server error"}
#: An event type no client knows: relays and SDKs must pass it through (§6).
UNKNOWN_EVENT = b'event: emulator_future_event\ndata: {"type": "emulator_future_event"}\n\n'


def stream_knobs(frames: list[bytes], headers: dict[str, str]) -> list[bytes]:
    """`frames` as the test knobs ``x-emulator-stream-error`` and ``x-emulator-stream-extra``
    ask: cut after ``message_start`` by an ``event: error``, or with an unknown event slipped in."""
    kind = headers.get("x-emulator-stream-error")
    if kind:
        error = {"type": kind, "message": STREAM_ERRORS.get(kind, "Emulated error.")}
        return [frames[0], _event("error", {"type": "error", "error": error})]
    if headers.get("x-emulator-stream-extra"):
        return [frames[0], UNKNOWN_EVENT, *frames[1:]]
    return frames
