"""Strict emulators of Gemini's native API on its three endpoints (issue 33, evidence
/work/shared/gemini-native.md), written apart from the sanitizer so they can judge its output.

`create_gemini_native_app(endpoint)` (``aistudio``, ``vertex``, ``code-assist``) is a raw ASGI
app serving, any API key or token accepted (``x-goog-api-key``, ``?key=``, ``Bearer``; none
is kept):

- AI Studio: ``POST /{v1|v1beta|v1alpha}/models/{model}:generateContent``,
  ``:streamGenerateContent`` and ``:countTokens``; ``GET /{v}/models`` and ``…/models/{model}``;
- Vertex: the same methods under ``/{v1|v1beta1}/projects/{p}/locations/{l}/publishers/google/
  models/{model}`` and, Express mode, ``/{v}/publishers/google/models/{model}``; ``GET`` of
  ``…/publishers/google/models``;
- Code Assist: ``POST /v1internal:generateContent``, ``:streamGenerateContent`` and
  ``:countTokens`` (the model in the body, the request under ``request``, answers wrapped).

Requests are judged by `gemini_native_rules.validate_native` and answered by
`gemini_native_answer` (scripted tool loops included). ``countTokens`` and model listing are
not validated (the proxy relays them unchecked). Streams: ``?alt=sse`` gives ``data: …\\r\\n\\r\\n``
events, otherwise one JSON array written piece by piece (§6).

Test knobs, as request headers: ``x-emulator-status: 429`` (that status in the endpoint's
envelope, before validation), ``x-emulator-chunks``, ``x-emulator-pacing-ms`` (as the other
emulators), ``x-emulator-stream-error: 503`` (a 200 stream cut after its first chunk by an
``{"error": {"code": 503, …, "status": "UNAVAILABLE"}}`` event; any value that is not a 4xx/5xx
status means 503), ``x-emulator-strict: N10,N19`` (turns on off-by-default rules, among N4,
N10, N17 and N19, for this request). Each 200 carries ``x-emulator-body-sha256`` of the
request body.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

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
    respond,
    stream,
)
from proxy.emulator.common import Rejection
from proxy.emulator.gemini_native_answer import (
    Reply,
    plan_reply,
    reply_body,
    stream_chunks,
    stream_frames,
)
from proxy.emulator.gemini_native_errors import (
    AISTUDIO,
    CODE_ASSIST,
    ENDPOINTS,
    VERTEX,
    as_array,
    forced,
    not_found,
    not_json,
)
from proxy.emulator.gemini_native_rules import Strictness, validate_native
from proxy.emulator.gemini_native_schema import get, parse_rejection, wrapper_errors

__all__ = ["ENDPOINTS", "GeminiNativeApp", "Strictness", "create_gemini_native_app"]

METHODS = ("generateContent", "streamGenerateContent", "countTokens")
MODELS = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3-flash-preview")
_MODEL = r"([^/:]+)"
_CALLS = {
    AISTUDIO: re.compile(rf"/(?:v1|v1beta|v1alpha)/models/{_MODEL}:(\w+)"),
    VERTEX: re.compile(
        rf"/(?:v1|v1beta1)(?:/projects/[^/]+/locations/[^/]+)?/publishers/google/models/{_MODEL}:(\w+)"
    ),
    CODE_ASSIST: re.compile(r"/v1internal:(\w+)"),
}
_LISTS = {
    AISTUDIO: re.compile(rf"/(?:v1|v1beta|v1alpha)/models(?:/{_MODEL})?"),
    VERTEX: re.compile(
        rf"/(?:v1|v1beta1)(?:/projects/[^/]+/locations/[^/]+)?/publishers/google/models(?:/{_MODEL})?"
    ),
}
_JSON = b"application/json; charset=UTF-8"


def create_gemini_native_app(
    endpoint: str,
    *,
    pacing_ms: float = 0.0,
    chunks: int | None = None,
    received: list[ReceivedRequest] | None = None,
    strict: Strictness | None = None,
) -> GeminiNativeApp:
    """A strict fake `endpoint` (one of `ENDPOINTS`) as an ASGI app; the knobs are the other
    emulators' (`strict` turns on the rules that are off by default: N10 on Vertex, N4, N17,
    N19)."""
    if endpoint not in ENDPOINTS:
        raise ValueError(f"unknown endpoint {endpoint!r}; expected one of {ENDPOINTS}")
    return GeminiNativeApp(endpoint, pacing_ms, chunks, received, strict or Strictness())


class GeminiNativeApp:
    """The ASGI callable; see `create_gemini_native_app`. `handle` also serves the native
    routes of the ``gemini`` chat emulator (`app.EmulatorApp`)."""

    def __init__(
        self,
        endpoint: str,
        pacing_ms: float,
        chunks: int | None,
        received: list[ReceivedRequest] | None,
        strict: Strictness,
    ) -> None:
        self.endpoint = endpoint
        self.pacing_ms = pacing_ms
        self.chunks = chunks
        self.received = received
        self.strict = strict

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = await accept(scope, receive, send, self.received)
        if request is None:
            return
        if self.serves(request.method, request.path):
            await self.handle(request, scope.get("query_string", b""), send)
        else:
            await _reject(send, not_found(self.endpoint, request.method, request.path))

    def serves(self, method: str, path: str) -> bool:
        """Whether `path` is one of this endpoint's routes."""
        if method == "POST":
            match = _CALLS[self.endpoint].fullmatch(path)
            return match is not None and match.groups()[-1] in METHODS
        listing = _LISTS.get(self.endpoint)
        return method == "GET" and listing is not None and listing.fullmatch(path) is not None

    async def handle(self, request: ReceivedRequest, query: bytes, send: Send) -> None:
        """Answer a request `serves` accepted."""
        if request.method == "GET":
            await respond(send, 200, self._models(request.path), _JSON)
            return
        match = _CALLS[self.endpoint].fullmatch(request.path)
        assert match is not None
        method, model = match.groups()[-1], match.group(1) if self.endpoint != CODE_ASSIST else ""
        streaming = method == "streamGenerateContent"
        sse = parse_qs(query.decode("latin-1")).get("alt") == ["sse"]
        reply = self._reply(request, method, model)
        if isinstance(reply, Rejection):
            array = streaming and (not sse or self.endpoint == CODE_ASSIST)
            await _reject(send, as_array(reply) if array else reply)
            return
        body, plan = reply
        extra = [digest(request.body)]
        if not streaming or plan is None:
            await respond(send, 200, body, _JSON, extra)
            return
        chunks = int_header(request.headers, "x-emulator-chunks") or self.chunks
        pacing = float_header(request.headers, "x-emulator-pacing-ms", self.pacing_ms)
        frames = stream_frames(stream_chunks(plan, chunks), sse, _stream_error(request.headers))
        content_type = b"text/event-stream" if sse else _JSON
        await stream(send, frames, pacing / 1000, extra, content_type)

    def _reply(
        self, request: ReceivedRequest, method: str, model: str
    ) -> Rejection | tuple[bytes, Reply | None]:
        status = int_header(request.headers, "x-emulator-status")
        if status is not None and 400 <= status <= 599:
            return forced(self.endpoint, status)
        try:
            body = orjson.loads(request.body)
        except orjson.JSONDecodeError:
            return not_json(self.endpoint, "Unexpected token.")
        if method == "countTokens":
            return self._count(request.body), None
        inner, root = body, ""
        if self.endpoint == CODE_ASSIST:
            rejection = parse_rejection(self.endpoint, wrapper_errors(body))
            if rejection is not None:
                return rejection
            inner, root = get(body, "request"), "request"
            model = str(get(body, "model") or "")
        model = model.removeprefix("models/")
        strict = _stricter(self.strict, request.headers.get("x-emulator-strict", ""))
        rejection = validate_native(self.endpoint, model, inner, strict, root)
        if rejection is not None:
            return rejection
        ids = not (self.endpoint == VERTEX and strict.vertex_rejects_ids)
        plan = plan_reply(self.endpoint, model, inner, request.body, ids=ids)
        return reply_body(plan), plan

    def _count(self, raw: bytes) -> bytes:
        tokens = max(len(raw) // 4, 1)
        answer: dict[str, Any] = {"totalTokens": tokens}
        if self.endpoint == AISTUDIO:
            answer["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": tokens}]
        elif self.endpoint == VERTEX:
            answer["totalBillableCharacters"] = len(raw)
        return orjson.dumps(answer)

    def _models(self, path: str) -> bytes:
        match = _LISTS[self.endpoint].fullmatch(path)
        name = match.group(1) if match is not None else None
        if self.endpoint == VERTEX:
            models = [{"name": f"publishers/google/models/{m}", "versionId": "001"} for m in MODELS]
            return orjson.dumps(models[0] | {"name": f"publishers/google/models/{name}"}
                                if name else {"publisherModels": models})  # fmt: skip
        if name:
            return orjson.dumps(_model(name.removeprefix("models/")))
        return orjson.dumps({"models": [_model(m) for m in MODELS]})


def _model(model: str) -> dict[str, Any]:
    """An AI Studio ``Model`` resource."""
    return {
        "name": f"models/{model}",
        "version": "001",
        "displayName": model,
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
        "thinking": True,
    }


#: The off-by-default rules a request may turn on (``x-emulator-strict: N10,N19``).
_OPT_IN = {
    "N4": "trailing_model_turn",
    "N10": "vertex_rejects_ids",
    "N17": "struct_values",
    "N19": "response_ids",
}


def _stricter(strict: Strictness, header: str) -> Strictness:
    names = {_OPT_IN[rule] for rule in re.split(r"[,\s]+", header.upper()) if rule in _OPT_IN}
    return replace(strict, **dict.fromkeys(names, True)) if names else strict


def _stream_error(request_headers: dict[str, str]) -> int | None:
    if "x-emulator-stream-error" not in request_headers:
        return None
    status = int_header(request_headers, "x-emulator-stream-error")
    return status if status is not None and 400 <= status <= 599 else 503


async def _reject(send: Send, rejection: Rejection) -> None:
    extra = list(rejection.headers)
    if rejection.status in (429, 503):
        extra.append((b"retry-after", b"1"))
    await respond(send, rejection.status, rejection.body, _JSON, extra)
