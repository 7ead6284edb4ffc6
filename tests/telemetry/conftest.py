"""A proxy traced into the SDK's in-memory exporter, in front of a scripted upstream that
answers each wire API in JSON or SSE with usage, and records what it received."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from proxy.app import create_app
from proxy.emulator import create_emulator_app, create_gemini_native_app
from proxy.emulator.asgi import ReceivedRequest, accept
from proxy.settings import load_settings
from proxy.telemetry.otel import Tracing
from tests.servers import running

USAGE = {
    "chat": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    "responses": {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14},
    "messages": {"input_tokens": 11, "output_tokens": 3},
}


def _json(path: str) -> dict[str, Any]:
    if path.endswith("/chat/completions"):
        message = {"role": "assistant", "content": "Done."}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {
            "id": "chatcmpl-7",
            "object": "chat.completion",
            "model": "gpt-4o-2024-08-06",
            "choices": [choice],
            "usage": USAGE["chat"],
        }
    if path.endswith("/responses"):
        output = [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done."}],
            }
        ]
        return {
            "id": "resp_7",
            "object": "response",
            "status": "completed",
            "model": "gpt-4o-2024-08-06",
            "output": output,
            "usage": USAGE["responses"],
        }
    return {
        "id": "msg_7",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "usage": USAGE["messages"],
    }


def _events(path: str) -> list[bytes]:
    def data(obj: Any, event: str | None = None) -> bytes:
        head = f"event: {event}\n".encode() if event else b""
        return head + b"data: " + orjson.dumps(obj) + b"\n\n"

    if path.endswith("/chat/completions"):
        base = {"id": "chatcmpl-7", "object": "chat.completion.chunk", "model": "gpt-4o-2024-08-06"}
        return [
            data(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": "Do"}, "finish_reason": None}],
                }
            ),
            data(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"content": "ne."}, "finish_reason": "stop"}],
                }
            ),
            data({**base, "choices": [], "usage": USAGE["chat"]}),
            b"data: [DONE]\n\n",
        ]
    if path.endswith("/responses"):
        whole = {**_json(path), "output": []}
        return [
            data(
                {
                    "type": "response.created",
                    "response": {**whole, "status": "in_progress", "usage": None},
                },
                "response.created",
            ),
            data(
                {"type": "response.output_text.delta", "delta": "Done."},
                "response.output_text.delta",
            ),
            data({"type": "response.completed", "response": whole}, "response.completed"),
        ]
    start = {
        **_json(path),
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 11, "output_tokens": 1},
    }
    return [
        data({"type": "message_start", "message": start}, "message_start"),
        data(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Done."},
            },
            "content_block_delta",
        ),
        data(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            },
            "message_delta",
        ),
        data({"type": "message_stop"}, "message_stop"),
    ]


@dataclass
class Scripted:
    """Answers chat, Responses and Messages (JSON, or SSE when the body streams)."""

    received: list[ReceivedRequest] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        request = await accept(scope, receive, send, self.received)
        if request is None:
            return
        body = request.body
        stream = orjson.loads(body).get("stream") is True if body else False
        if not stream:
            payload = orjson.dumps(_json(scope["path"]))
            start = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 200, "headers": start})
            await send({"type": "http.response.body", "body": payload})
            return
        start = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        for event in _events(scope["path"]):
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


class Kept(MetricExporter):
    """A metric exporter keeping what it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.exported: list[MetricsData] = []

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        self.exported.append(metrics_data)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return


@dataclass
class Traced:
    """A running traced proxy, its exporter, its metric reader, its upstream."""

    url: str
    http: httpx.Client
    spans: InMemorySpanExporter
    tracing: Tracing
    upstream: Scripted

    def post(self, path: str, body: Any, **headers: str) -> httpx.Response:
        sent = {"content-type": "application/json", **headers}
        return self.http.post(self.url + path, content=orjson.dumps(body), headers=sent)

    def trace(self, count: int, timeout: float = 5.0) -> list[ReadableSpan]:
        """The finished spans once there are ``count`` (the SERVER span ends after the
        answer's last byte went out: waited for, bounded)."""
        deadline = time.monotonic() + timeout
        while True:
            self.tracing.force_flush()
            spans = list(self.spans.get_finished_spans())
            if len(spans) >= count or time.monotonic() > deadline:
                return spans
            time.sleep(0.01)


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Traced]]:
    """``traced(**settings)``: a proxy with the upstreams ``scripted`` (chat, Responses,
    Messages), ``deepseek`` and ``gemini`` (their strict emulators: chat, Gemini's native API),
    tracing into memory."""
    with ExitStack() as stack, httpx.Client(timeout=10.0) as http:

        def start(
            *, environ: dict[str, str] | None = None, metered: bool = True, **overrides: Any
        ) -> Traced:
            scripted = Scripted()
            url = stack.enter_context(running(scripted))
            deepseek = stack.enter_context(running(create_emulator_app("deepseek")))
            gemini = stack.enter_context(running(create_gemini_native_app("aistudio")))
            upstreams = {
                "scripted": {
                    "base_url": url + "/v1",
                    "anthropic_base_url": url + "/v1",
                    "models": ["gpt-*", "claude-*"],
                    "policy": "openai",
                },
                "deepseek": {
                    "base_url": deepseek + "/v1",
                    "models": ["deepseek-*"],
                    "policy": "openai",
                },
                "gemini": {"gemini_base_url": gemini, "models": ["gemini-*"], "policy": "gemini"},
            }
            repair_log = {"url": "memory://", "flush_interval": 0.05} | overrides.pop(
                "repair_log", {}
            )
            routing = {"default": "scripted"}
            settings = load_settings(
                upstreams=upstreams, repair_log=repair_log, routing=routing, **overrides
            )
            spans = InMemorySpanExporter()
            tracing = Tracing(settings, spans, Kept() if metered else None, environ or {})
            app = create_app(settings, tracing=tracing)
            proxy = stack.enter_context(running(app))
            return Traced(proxy, http, spans, tracing, scripted)

        yield start
