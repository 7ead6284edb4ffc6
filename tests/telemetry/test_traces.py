"""OpenTelemetry spans over real sockets (issue 36): a SERVER span per request, a CLIENT span
per upstream attempt in the GenAI conventions, every finding an event, the client's trace
continued to the upstream, content only when opted in. Spans land in the SDK's in-memory
exporter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from tests.telemetry.conftest import Traced

Start = Callable[..., Traced]
USER = {"role": "user", "content": "Read a.txt"}
ORPHAN = [
    USER,
    {"role": "assistant", "content": ""},
    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
]
CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
TRACEPARENT = f"00-{CLIENT_TRACE}-b7ad6b7169203331-01"


def kinds(spans: list[ReadableSpan], kind: SpanKind) -> list[ReadableSpan]:
    return [s for s in spans if s.kind is kind]


def one_server(spans: list[ReadableSpan]) -> ReadableSpan:
    (server,) = kinds(spans, SpanKind.SERVER)
    return server


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


CASES = [
    ("/v1/chat/completions", {"model": "gpt-4o", "messages": [USER]}),
    (
        "/v1/responses",
        {
            "model": "gpt-4o",
            "input": [{"type": "message", "role": "user", "content": "Read a.txt"}],
        },
    ),
    ("/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [USER]}),
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("path", "body"), CASES, ids=["chat", "responses", "messages"])
def test_a_clean_request_has_a_server_and_a_client_span(
    traced: Start, path: str, body: dict[str, Any], stream: bool
) -> None:
    proxy = traced()
    sent = {**body, "stream": True} if stream else body
    if stream and path.endswith("completions"):
        sent["stream_options"] = {"include_usage": True}

    response = proxy.post(path, sent)

    assert response.status_code == 200, response.text
    spans = proxy.trace(2)
    server = one_server(spans)
    (client,) = kinds(spans, SpanKind.CLIENT)
    assert client.parent is not None
    assert client.parent.span_id == server.context.span_id
    found = attrs(client)
    model = body["model"]
    assert client.name == f"chat {model}"
    assert found["gen_ai.operation.name"] == "chat"
    assert found["gen_ai.provider.name"] == "openai"
    assert found["gen_ai.request.model"] == model
    assert found["gen_ai.response.model"] in ("gpt-4o-2024-08-06", "claude-sonnet-4-5")
    assert found["gen_ai.response.id"] in ("chatcmpl-7", "resp_7", "msg_7")
    assert found["gen_ai.response.finish_reasons"] in (("stop",), ("completed",), ("end_turn",))
    assert found["gen_ai.usage.input_tokens"] == 11
    assert found["gen_ai.usage.output_tokens"] == 3
    assert found["server.address"] == "127.0.0.1"
    assert found["http.response.status_code"] == 200
    assert len(found["toolcall_guard.conversation"]) == 16
    assert "gen_ai.conversation.id" not in found  # the client named none
    assert "error.type" not in found
    assert not any(k.startswith("gen_ai.input") for k in found)  # content: not opted in
    assert attrs(server)["toolcall_guard.outcome"] == "clean"
    assert attrs(server)["http.response.status_code"] == 200
    assert server.events == ()


def test_a_repaired_request_carries_each_finding_as_an_event(traced: Start) -> None:
    proxy = traced()

    response = proxy.post("/v1/chat/completions", {"model": "gpt-4o", "messages": ORPHAN})

    assert response.status_code == 200, response.text
    server = one_server(proxy.trace(2))
    assert attrs(server)["toolcall_guard.outcome"] == "repaired"
    assert attrs(server)["toolcall_guard.record_id"] == response.headers["x-toolcall-guard-record"]
    (event,) = server.events
    assert event.name == "toolcall_guard.repair"
    assert dict(event.attributes or {}) == {
        "toolcall_guard.rule": "orphan_tool_result",
        "toolcall_guard.path": "messages[2]",
        "toolcall_guard.action": "salvage",
    }


def test_a_request_refused_before_sending_has_no_client_span(traced: Start) -> None:
    proxy = traced()
    body = {"model": "gpt-4o", "messages": [USER, {"role": "robot", "content": "beep"}]}

    response = proxy.post("/v1/chat/completions", body)

    assert response.status_code == 400
    spans = proxy.trace(1)
    assert kinds(spans, SpanKind.CLIENT) == []
    server = one_server(spans)
    assert attrs(server)["error.type"] == "invalid_tool_history"
    assert attrs(server)["toolcall_guard.outcome"] == "rejected"
    assert [e.attributes["toolcall_guard.rule"] for e in server.events if e.attributes] == [
        "unknown_role"
    ]
    assert proxy.upstream.received == []


def test_a_retried_request_has_two_client_spans(traced: Start) -> None:
    proxy = traced()
    developer = [{"role": "developer", "content": "Be brief."}, USER]

    response = proxy.post("/v1/chat/completions", {"model": "deepseek-chat", "messages": developer})

    assert response.status_code == 200, response.text
    assert response.headers["x-toolcall-guard-retried"] == "developer_role"
    spans = proxy.trace(3)
    first, second = sorted(kinds(spans, SpanKind.CLIENT), key=lambda s: s.start_time or 0)
    assert attrs(first)["http.response.status_code"] == 400
    assert attrs(first)["error.type"]
    assert attrs(second)["http.response.status_code"] == 200
    assert "error.type" not in attrs(second)
    assert attrs(second)["gen_ai.provider.name"] == "openai"  # the upstream's policy dialect
    server = one_server(spans)
    assert attrs(server)["toolcall_guard.outcome"] == "repaired"
    rules = [e.attributes["toolcall_guard.rule"] for e in server.events if e.attributes]
    assert "developer_role" in rules


def test_the_upstream_continues_the_clients_trace_under_the_client_span(traced: Start) -> None:
    proxy = traced()
    sent = {"traceparent": TRACEPARENT, "tracestate": "vendor=1"}

    response = proxy.post("/v1/chat/completions", {"model": "gpt-4o", "messages": [USER]}, **sent)

    assert response.status_code == 200
    spans = proxy.trace(2)
    (client,) = kinds(spans, SpanKind.CLIENT)
    server = one_server(spans)
    assert f"{server.context.trace_id:032x}" == CLIENT_TRACE
    assert server.parent is not None
    assert f"{server.parent.span_id:016x}" == "b7ad6b7169203331"
    headers = proxy.upstream.received[0].headers
    version, trace_id, parent, flags = headers["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", CLIENT_TRACE, "01")
    assert parent == f"{client.context.span_id:016x}"
    assert headers["tracestate"] == "vendor=1"


def test_the_clients_own_conversation_id_is_kept(traced: Start) -> None:
    proxy = traced()
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [USER],
        "metadata": {"user_id": "user_ab12_account_cd34_session_5e6f"},
    }

    assert proxy.post("/v1/messages", body).status_code == 200

    (client,) = kinds(proxy.trace(2), SpanKind.CLIENT)
    assert attrs(client)["gen_ai.conversation.id"] == "5e6f"


def test_content_only_when_opted_in_and_captured_in_full(traced: Start) -> None:
    switch = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    body = {"model": "gpt-4o", "messages": [USER]}
    for capture, shown in (("full", True), ("redacted", False)):
        proxy = traced(environ=switch, repair_log={"capture": capture})

        assert proxy.post("/v1/chat/completions", body).status_code == 200

        (client,) = kinds(proxy.trace(2), SpanKind.CLIENT)
        found = attrs(client)
        assert ("gen_ai.input.messages" in found) is shown, capture
        if shown:  # in the conventions' schema (tests/telemetry/test_content.py)
            assert orjson.loads(found["gen_ai.input.messages"]) == [
                {"role": "user", "parts": [{"type": "text", "content": "Read a.txt"}]}
            ]
            assert orjson.loads(found["gen_ai.output.messages"]) == [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "Done."}],
                    "finish_reason": "stop",
                }
            ]


def test_messages_content_has_its_system_instructions(traced: Start) -> None:
    switch = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    proxy = traced(environ=switch)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": [USER],
    }

    assert proxy.post("/v1/messages", body).status_code == 200

    (client,) = kinds(proxy.trace(2), SpanKind.CLIENT)
    found = attrs(client)
    assert orjson.loads(found["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Be brief."}
    ]
    output = orjson.loads(found["gen_ai.output.messages"])
    assert output[0]["finish_reason"] == "stop"  # end_turn, in the conventions' words


def test_a_key_the_client_sent_is_scrubbed_from_content(traced: Start) -> None:
    switch = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    proxy = traced(environ=switch)
    key = "sk-test-0123456789abcdefghijklmnop"
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": f"my key is {key}"}]}

    assert (
        proxy.post("/v1/chat/completions", body, authorization=f"Bearer {key}").status_code == 200
    )

    (client,) = kinds(proxy.trace(2), SpanKind.CLIENT)
    assert key not in attrs(client)["gen_ai.input.messages"]


def test_metrics_in_the_conventions(traced: Start) -> None:
    proxy = traced()

    assert (
        proxy.post("/v1/chat/completions", {"model": "gpt-4o", "messages": [USER]}).status_code
        == 200
    )
    proxy.trace(2)

    assert proxy.tracing.histograms is not None
    data = proxy.tracing.histograms.collect()
    assert data is not None
    metrics = {
        m.name: m for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    duration = metrics["gen_ai.client.operation.duration"]
    assert duration.unit == "s"
    (point,) = duration.data.data_points
    assert dict(point.attributes or {})["gen_ai.request.model"] == "gpt-4o"
    tokens = {
        dict(p.attributes or {})["gen_ai.token.type"]: p.sum
        for p in metrics["gen_ai.client.token.usage"].data.data_points
    }
    assert tokens == {"input": 11, "output": 3}


@pytest.mark.parametrize("metered", [False, True])
def test_a_request_sampled_out_records_nothing_but_continues_the_trace(
    traced: Start, monkeypatch: pytest.MonkeyPatch, metered: bool
) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    proxy = traced(metered=metered)
    body = {"model": "gpt-4o", "messages": [USER]}

    response = proxy.post("/v1/chat/completions", body, traceparent=TRACEPARENT)

    assert response.status_code == 200
    headers = proxy.upstream.received[0].headers
    _, trace_id, _, flags = headers["traceparent"].split("-")
    assert (trace_id, flags) == (CLIENT_TRACE, "00")
    assert proxy.trace(1, timeout=0.3) == []


def test_gemini_native_is_generate_content_with_its_usage_metadata(traced: Start) -> None:
    proxy = traced()
    body = {"contents": [{"role": "user", "parts": [{"text": "Read a.txt"}]}]}

    response = proxy.post("/v1beta/models/gemini-2.5-flash:generateContent", body)

    assert response.status_code == 200, response.text
    (client,) = kinds(proxy.trace(2), SpanKind.CLIENT)
    assert client.name == "generate_content gemini-2.5-flash"
    found = attrs(client)
    assert found["gen_ai.operation.name"] == "generate_content"
    assert found["gen_ai.provider.name"] == "gcp.gemini"
    usage = response.json()["usageMetadata"]
    assert found["gen_ai.usage.input_tokens"] == usage["promptTokenCount"]
    assert found["gen_ai.usage.output_tokens"] == usage["candidatesTokenCount"]


def test_a_gemini_stream_has_its_usage_read_as_it_passes(traced: Start) -> None:
    proxy = traced()
    body = {"contents": [{"role": "user", "parts": [{"text": "Read a.txt"}]}]}
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"

    response = proxy.post(path, body)

    assert response.status_code == 200, response.text
    events = [
        orjson.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
    ]
    usage = next(e["usageMetadata"] for e in reversed(events) if "usageMetadata" in e)
    (client,) = kinds(proxy.trace(2), SpanKind.CLIENT)
    found = attrs(client)
    assert found["gen_ai.usage.input_tokens"] == usage["promptTokenCount"]
    assert found["gen_ai.usage.output_tokens"] == usage["candidatesTokenCount"]
    assert found["gen_ai.response.finish_reasons"]
