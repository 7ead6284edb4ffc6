"""The pure parts of tracing: what an answer says of itself, read chunk by chunk whatever the
chunk boundaries; provider names per dialect; the client's own conversation id; the content
switch."""

from __future__ import annotations

import itertools

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.core.policy import DIALECTS
from proxy.core.wire import WIRES
from proxy.telemetry.answer import AnswerReader
from proxy.telemetry.names import (
    PROVIDER_NAMES,
    client_conversation,
    content_captured,
    provider_name,
)


def _sse(*events: object) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


GEMINI_STREAM = _sse(
    {"candidates": [{"content": {"parts": [{"text": "Do"}]}}], "responseId": "g-1",
     "modelVersion": "gemini-2.5-flash", "usageMetadata": {"promptTokenCount": 9}},
    {"candidates": [{"content": {"parts": [{"text": "ne."}]}, "finishReason": "STOP"}],
     "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2}},
)  # fmt: skip


@pytest.mark.parametrize("size", [1, 7, 64, len(GEMINI_STREAM)])
def test_a_gemini_stream_is_read_across_any_chunk_boundary(size: int) -> None:
    reader = AnswerReader(sse=True)
    for at in range(0, len(GEMINI_STREAM), size):
        reader.feed(GEMINI_STREAM[at : at + size])
    reader.close()

    assert (reader.response_id, reader.response_model) == ("g-1", "gemini-2.5-flash")
    assert (reader.input_tokens, reader.output_tokens) == (9, 2)
    assert reader.finish_reasons == ["STOP"]


def test_code_assist_wraps_the_answer_in_response() -> None:
    reader = AnswerReader(sse=False)
    wrapped = {"response": {"responseId": "ca-1", "modelVersion": "gemini-2.5-pro",
               "candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
                               "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1}}}  # fmt: skip
    reader.feed(orjson.dumps(wrapped))
    reader.close()

    assert (reader.response_id, reader.input_tokens, reader.output_tokens) == ("ca-1", 5, 1)
    assert reader.answer == wrapped  # kept whole: the content converter unwraps it


def test_a_json_answer_too_large_is_not_read() -> None:
    reader = AnswerReader(sse=False)
    reader.feed(b'{"id": "x", "pad": "' + b"a" * (2 << 20) + b'"}')
    reader.close()

    assert reader.response_id is None
    assert len(reader.json) == 0  # nothing kept past the limit


def test_every_dialect_has_a_provider_name_and_the_gemini_rows_operation() -> None:
    assert set(DIALECTS) <= set(PROVIDER_NAMES)
    assert provider_name("vertex") == "gcp.vertex_ai"
    assert provider_name("code-assist") == provider_name("gemini") == "gcp.gemini"
    assert provider_name("kimi") == "moonshot_ai"
    assert WIRES["gemini"].operation == "generate_content"
    assert {WIRES[n].operation for n in ("chat", "responses", "messages")} == {"chat"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"conversation": "conv_1", "input": []}, "conv_1"),
        ({"conversation": {"id": "conv_2"}, "input": []}, "conv_2"),
        ({"metadata": {"user_id": "user_a_account_b_session_c-1"}}, "c-1"),
        ({"metadata": {"user_id": '{"device_id": "d", "session_id": "s-2"}'}}, "s-2"),
        ({"metadata": {"user_id": "alice"}}, None),  # a user, not a conversation
        ({"messages": [{"role": "user", "content": "hi"}]}, None),  # never a digest
    ],
)
def test_the_conversation_id_is_only_the_clients_own(body: object, expected: str | None) -> None:
    assert client_conversation(body) == expected


def test_content_needs_the_switch_and_full_capture() -> None:
    on = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    assert content_captured("full", on)
    assert content_captured(
        "full", {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
    )
    assert not content_captured("full", {})
    assert not content_captured("redacted", on)
    assert not content_captured("none", on)


CHAT_STREAM = _sse(
    *[{"id": "c-1", "model": "m", "choices": [{"delta": {"content": "tok "}}]} for _ in range(6)],
    {"id": "c-1", "model": "m", "choices": [{"delta": {}, "finish_reason": "stop"}]},
    {"id": "c-1", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 6}},
) + b"data: [DONE]\n\n"  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, len(CHAT_STREAM) - 1), max_size=12))
def test_a_chat_stream_reads_the_same_however_it_is_cut(cuts: list[int]) -> None:
    """The chunks skipped whole (no mark in them) never hide a mark cut across two."""
    reader = AnswerReader(sse=True)
    edges = [0, *sorted(set(cuts)), len(CHAT_STREAM)]
    for start, end in itertools.pairwise(edges):
        reader.feed(CHAT_STREAM[start:end])
    reader.close()

    assert (reader.response_id, reader.response_model) == ("c-1", "m")
    assert (reader.input_tokens, reader.output_tokens, reader.finish_reasons) == (12, 6, ["stop"])
