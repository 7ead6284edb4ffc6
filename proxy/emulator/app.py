"""The emulators as a raw ASGI app (no framework: it is also the benchmark's fake upstream).

Routes, per provider prefix (`PREFIXES`: ``/v1`` for most; ``/v1beta/openai`` and ``/v1`` for
gemini, ``/openai/v1`` and ``/v1`` for groq, ``/compatible-mode/v1`` and ``/v1`` for qwen):
``POST {prefix}/chat/completions`` and ``GET {prefix}/models``; for anthropic, deepseek, kimi,
glm and minimax also ``POST {prefix}/messages`` and ``…/messages/count_tokens`` under
`MESSAGES_PREFIXES` (the Messages emulators, `messages`); anything else is a 404 in the
provider's error shape.

Test knobs, as request headers on ``POST …/chat/completions``:

- ``x-emulator-status: 429`` (also on ``…/messages``) answers that status with the provider's
  error body before any validation (429 and 503 carry ``retry-after: 1``);
- ``x-emulator-pacing-ms: 20`` and ``x-emulator-chunks: 5`` override the app's `pacing_ms` and
  `chunks` for one streamed answer.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import orjson

from proxy.emulator.common import Rejection
from proxy.emulator.completion import CREATED, completion_json, plan, stream_frames
from proxy.emulator.messages import (
    MESSAGES_PREFIXES,
    anthropic_models,
    count_tokens_reply,
    messages_reply,
)
from proxy.emulator.messages_errors import forced as messages_forced
from proxy.emulator.messages_threads import Threads
from proxy.emulator.responses_answer import responses_reply
from proxy.emulator.validators import (
    PROVIDERS,
    forced,
    missing_model,
    not_found,
    not_json,
    validate,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PREFIXES = {
    "openai": ("/v1",),
    "deepseek": ("/v1",),
    "gemini": ("/v1beta/openai", "/v1"),
    "kimi": ("/v1",),
    "mistral": ("/v1",),
    "groq": ("/openai/v1", "/v1"),
    "xai": ("/v1",),
    "qwen": ("/compatible-mode/v1", "/v1"),
    "vllm": ("/v1",),
    "ollama": ("/v1",),
    "anthropic": ("/v1",),  # its OpenAI-compatible chat endpoint (chat_compat)
    "glm": ("/api/paas/v4", "/v1"),
    "minimax": ("/v1",),
}
MODELS = {
    "openai": ("gpt-4o", "gpt-4o-mini", "o3"),
    "deepseek": ("deepseek-chat", "deepseek-reasoner", "deepseek-v4-flash", "deepseek-r1"),
    "gemini": ("models/gemini-2.5-flash", "models/gemini-3-pro-preview"),
    "kimi": ("kimi-k2-0905-preview", "kimi-k2-thinking", "kimi-k2.5"),
    "mistral": ("mistral-large-latest", "mistral-small-latest", "devstral-medium-latest"),
    "groq": ("llama-3.3-70b-versatile", "openai/gpt-oss-120b", "qwen/qwen3-32b"),
    "xai": ("grok-4", "grok-3-mini"),
    "qwen": ("qwen-plus", "qwen3-coder-plus", "qwq-plus"),
    "vllm": ("Qwen/Qwen3-8B", "mistralai/Devstral-Small-2507", "google/gemma-3-27b-it"),
    "ollama": ("llama3.2", "mistral-small3.2", "qwen3:8b"),
    "anthropic": ("claude-sonnet-4-6", "claude-opus-4-8", "claude-haiku-4-5"),
    "glm": ("glm-4.6", "glm-5"),
    "minimax": ("MiniMax-M2", "MiniMax-M2.7"),
}
_OWNERS = {"openai": "system", "gemini": "google", "groq": "Meta", "qwen": "system"}
_OWNERS |= {"kimi": "moonshot", "xai": "xai", "vllm": "vllm", "ollama": "library"}
_OWNERS |= {"glm": "z-ai", "minimax": "minimax"}
_JSON = b"application/json"
_RETRY_STATUSES = (429, 503)


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """A request as the emulator received it (headers keyed in lower case)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def create_emulator_app(
    provider: str,
    *,
    pacing_ms: float = 0.0,
    chunks: int | None = None,
    received: list[ReceivedRequest] | None = None,
) -> EmulatorApp:
    """A strict fake `provider` (one of `PROVIDERS`) as an ASGI app.

    `pacing_ms` spaces the SSE frames of streamed answers, `chunks` sets how many pieces the
    streamed text is cut into (one per word when None), and every request is appended to
    `received` when a list is given.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {PROVIDERS}")
    return EmulatorApp(provider, pacing_ms=pacing_ms, chunks=chunks, received=received)


class EmulatorApp:
    """The ASGI callable; see `create_emulator_app`."""

    def __init__(
        self,
        provider: str,
        *,
        pacing_ms: float,
        chunks: int | None,
        received: list[ReceivedRequest] | None,
    ) -> None:
        self.provider = provider
        self.pacing_ms = pacing_ms
        self.chunks = chunks
        self.received = received
        prefixes = PREFIXES[provider]
        self._chat_paths = frozenset(p + "/chat/completions" for p in prefixes)
        self._model_paths = frozenset(p + "/models" for p in prefixes)
        # OpenAI's Responses API (validator in `responses`); other providers' are not emulated
        self._responses_paths = frozenset(
            p + "/responses" for p in prefixes if provider == "openai"
        )
        messages = MESSAGES_PREFIXES.get(provider, ())
        self._messages_paths = frozenset(p + "/messages" for p in messages)
        self._count_paths = frozenset(p + "/messages/count_tokens" for p in messages)
        self._threads = Threads() if provider == "anthropic" else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        request = ReceivedRequest(
            method=scope["method"],
            path=scope["path"],
            headers=_headers(scope["headers"]),
            body=await _read_body(receive),
        )
        if self.received is not None:
            self.received.append(request)
        if request.method == "POST" and request.path in self._chat_paths:
            await self._chat(request, send)
        elif request.method == "POST" and request.path in self._responses_paths:
            await self._responses(request, send)
        elif request.method == "POST" and request.path in self._messages_paths:
            await self._messages(request, send)
        elif request.method == "POST" and request.path in self._count_paths:
            await self._count_tokens(request, send)
        elif request.method == "GET" and request.path in self._model_paths:
            await _respond(send, 200, self._models())
        else:
            await _reject(send, not_found(self.provider, request.method, request.path))

    async def _chat(self, request: ReceivedRequest, send: Send) -> None:
        status = _int_header(request.headers, "x-emulator-status")
        if status is not None and 400 <= status <= 599:
            await _reject(send, forced(self.provider, status))
            return
        try:
            body = orjson.loads(request.body)
        except orjson.JSONDecodeError as error:
            await _reject(send, not_json(self.provider, error.lineno, error.colno))
            return
        rejection = missing_model(self.provider, body) or validate(
            self.provider, body, raw=request.body
        )
        if rejection is not None:
            await _reject(send, rejection)
            return
        answer = plan(self.provider, body, request.body)
        if body.get("stream") is not True:
            await _respond(send, 200, completion_json(answer))
            return
        chunks = _int_header(request.headers, "x-emulator-chunks") or self.chunks
        pacing = _float_header(request.headers, "x-emulator-pacing-ms", self.pacing_ms)
        await _stream(send, stream_frames(answer, chunks), pacing / 1000)

    async def _responses(self, request: ReceivedRequest, send: Send) -> None:
        status = _int_header(request.headers, "x-emulator-status")
        if status is not None and 400 <= status <= 599:
            await _reject(send, forced(self.provider, status))
            return
        chunks = _int_header(request.headers, "x-emulator-chunks") or self.chunks
        reply = responses_reply(request.body, chunks)
        if isinstance(reply, Rejection):
            await _reject(send, reply)
        elif isinstance(reply, bytes):
            await _respond(send, 200, reply)
        else:
            pacing = _float_header(request.headers, "x-emulator-pacing-ms", self.pacing_ms)
            await _stream(send, reply, pacing / 1000)

    async def _messages(self, request: ReceivedRequest, send: Send) -> None:
        status = _int_header(request.headers, "x-emulator-status")
        if status is not None and 400 <= status <= 599:
            await _reject(send, messages_forced(self.provider, status))
            return
        chunks = _int_header(request.headers, "x-emulator-chunks") or self.chunks
        reply = messages_reply(self.provider, request.body, chunks, self._threads)
        if isinstance(reply, Rejection):
            await _reject(send, reply)
        elif isinstance(reply, bytes):
            await _respond(send, 200, reply, extra=[_digest(request.body)])
        else:
            pacing = _float_header(request.headers, "x-emulator-pacing-ms", self.pacing_ms)
            await _stream(send, reply, pacing / 1000, [_digest(request.body)])

    async def _count_tokens(self, request: ReceivedRequest, send: Send) -> None:
        reply = count_tokens_reply(self.provider, request.body)
        if isinstance(reply, Rejection):
            await _reject(send, reply)
        else:
            await _respond(send, 200, reply, extra=[_digest(request.body)])

    def _models(self) -> bytes:
        if self.provider == "anthropic":
            return anthropic_models()
        owner = _OWNERS.get(self.provider, self.provider)
        data = [
            {"id": model, "object": "model", "created": CREATED, "owned_by": owner}
            for model in MODELS[self.provider]
        ]
        return orjson.dumps({"object": "list", "data": data})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _read_body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # http.disconnect
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


def _headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for key, value in raw:
        name, text = key.decode("latin-1").lower(), value.decode("latin-1")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text
    return headers


def _int_header(headers: dict[str, str], name: str) -> int | None:
    value = headers.get(name, "")
    return int(value) if value.strip().isdigit() else None


def _float_header(headers: dict[str, str], name: str, default: float) -> float:
    try:
        return float(headers[name])
    except (KeyError, ValueError):
        return default


async def _reject(send: Send, rejection: Rejection) -> None:
    gemini = rejection.body[:1] == b"["  # only Gemini answers an array
    content_type = b"application/json; charset=UTF-8" if gemini else _JSON
    extra = list(rejection.headers)
    if rejection.status in _RETRY_STATUSES and not any(k == b"retry-after" for k, _ in extra):
        extra.append((b"retry-after", b"1"))
    await _respond(send, rejection.status, rejection.body, content_type, extra)


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = _JSON,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})


def _digest(body: bytes) -> tuple[bytes, bytes]:
    """``x-emulator-body-sha256``: what the emulator received, for byte-for-byte checks."""
    return b"x-emulator-body-sha256", hashlib.sha256(body).hexdigest().encode()


async def _stream(
    send: Send, frames: list[bytes], pause: float, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
    headers += extra or []
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for k, frame in enumerate(frames):
        if k and pause > 0:
            await asyncio.sleep(pause)
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
