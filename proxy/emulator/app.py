"""The emulators as a raw ASGI app (no framework: it is also the benchmark's fake upstream).

Routes, per provider prefix (`PREFIXES`: ``/v1`` for most; ``/v1beta/openai`` and ``/v1`` for
gemini, which also serves Gemini's native AI Studio routes (`gemini_native`: ``/v1beta/models/
{model}:generateContent``…; ``GET /v1beta/models``, while ``GET /v1/models`` stays the
OpenAI-shaped list), ``/openai/v1`` and ``/v1`` for groq, ``/compatible-mode/v1`` and ``/v1``
for qwen):
``POST {prefix}/chat/completions`` and ``GET {prefix}/models``; for anthropic, deepseek, kimi,
glm and minimax also ``POST {prefix}/messages`` and ``…/messages/count_tokens`` under
`MESSAGES_PREFIXES` (the Messages emulators, `messages`); anything else is a 404 in the
provider's error shape.

Test knobs, as request headers on ``POST …/chat/completions``:

- ``x-emulator-status: 429`` (also on ``…/messages``) answers that status with the provider's
  error body before any validation (429 and 503 carry ``retry-after: 1``);
- ``x-emulator-pacing-ms: 20`` and ``x-emulator-chunks: 5`` override the app's `pacing_ms` and
  `chunks` for one streamed answer;
- ``x-emulator-stream-error: overloaded_error`` (``…/messages`` with ``stream: true``) ends the
  200 stream after ``message_start`` with Anthropic's ``event: error`` of that type, and
  ``x-emulator-stream-extra: 1`` slips an event of an unknown type after ``message_start``.
"""

from __future__ import annotations

import orjson

from proxy.emulator.asgi import (
    Receive,
    ReceivedRequest,
    Scope,
    Send,
    accept,
    digest,
    float_header,
    int_header,
    reject,
    respond,
    stream,
)
from proxy.emulator.common import Rejection
from proxy.emulator.completion import CREATED, completion_json, plan, stream_frames
from proxy.emulator.gemini_native import create_gemini_native_app
from proxy.emulator.gemini_native_errors import AISTUDIO
from proxy.emulator.messages import (
    MESSAGES_PREFIXES,
    anthropic_models,
    count_tokens_reply,
    messages_reply,
)
from proxy.emulator.messages_errors import forced as messages_forced
from proxy.emulator.messages_events import stream_knobs
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
        # Gemini's native API (AI Studio) beside its OpenAI-compatible endpoint
        self._native = (
            create_gemini_native_app(AISTUDIO, pacing_ms=pacing_ms, chunks=chunks)
            if provider == "gemini"
            else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = await accept(scope, receive, send, self.received)
        if request is None:
            return
        if request.method == "POST" and request.path in self._chat_paths:
            await self._chat(request, send)
        elif request.method == "POST" and request.path in self._responses_paths:
            await self._responses(request, send)
        elif request.method == "POST" and request.path in self._messages_paths:
            await self._messages(request, send)
        elif request.method == "POST" and request.path in self._count_paths:
            await self._count_tokens(request, send)
        elif request.method == "GET" and request.path in self._model_paths:
            await respond(send, 200, self._models())
        elif self._native is not None and self._native.serves(request.method, request.path):
            await self._native.handle(request, scope.get("query_string", b""), send)
        else:
            await reject(send, not_found(self.provider, request.method, request.path))

    async def _chat(self, request: ReceivedRequest, send: Send) -> None:
        status = int_header(request.headers, "x-emulator-status")
        if status is not None and 400 <= status <= 599:
            await reject(send, forced(self.provider, status))
            return
        try:
            body = orjson.loads(request.body)
        except orjson.JSONDecodeError as error:
            await reject(send, not_json(self.provider, error.lineno, error.colno))
            return
        rejection = missing_model(self.provider, body) or validate(
            self.provider, body, raw=request.body
        )
        if rejection is not None:
            await reject(send, rejection)
            return
        answer = plan(self.provider, body, request.body)
        if body.get("stream") is not True:
            await respond(send, 200, completion_json(answer))
            return
        chunks = int_header(request.headers, "x-emulator-chunks") or self.chunks
        pacing = float_header(request.headers, "x-emulator-pacing-ms", self.pacing_ms)
        await stream(send, stream_frames(answer, chunks), pacing / 1000)

    async def _responses(self, request: ReceivedRequest, send: Send) -> None:
        status = int_header(request.headers, "x-emulator-status")
        if status is not None and 400 <= status <= 599:
            await reject(send, forced(self.provider, status))
            return
        chunks = int_header(request.headers, "x-emulator-chunks") or self.chunks
        reply = responses_reply(request.body, chunks)
        if isinstance(reply, Rejection):
            await reject(send, reply)
        elif isinstance(reply, bytes):
            await respond(send, 200, reply)
        else:
            pacing = float_header(request.headers, "x-emulator-pacing-ms", self.pacing_ms)
            await stream(send, reply, pacing / 1000)

    async def _messages(self, request: ReceivedRequest, send: Send) -> None:
        status = int_header(request.headers, "x-emulator-status")
        if status is not None and 400 <= status <= 599:
            await reject(send, messages_forced(self.provider, status))
            return
        chunks = int_header(request.headers, "x-emulator-chunks") or self.chunks
        reply = messages_reply(self.provider, request.body, chunks, self._threads)
        if isinstance(reply, Rejection):
            await reject(send, reply)
        elif isinstance(reply, bytes):
            await respond(send, 200, reply, extra=[digest(request.body)])
        else:
            pacing = float_header(request.headers, "x-emulator-pacing-ms", self.pacing_ms)
            frames = stream_knobs(reply, request.headers)
            await stream(send, frames, pacing / 1000, [digest(request.body)])

    async def _count_tokens(self, request: ReceivedRequest, send: Send) -> None:
        reply = count_tokens_reply(self.provider, request.body)
        if isinstance(reply, Rejection):
            await reject(send, reply)
        else:
            await respond(send, 200, reply, extra=[digest(request.body)])

    def _models(self) -> bytes:
        if self.provider == "anthropic":
            return anthropic_models()
        owner = _OWNERS.get(self.provider, self.provider)
        data = [
            {"id": model, "object": "model", "created": CREATED, "owned_by": owner}
            for model in MODELS[self.provider]
        ]
        return orjson.dumps({"object": "list", "data": data})
