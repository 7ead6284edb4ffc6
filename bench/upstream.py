"""A fast fake upstream: a fixed chat completion (or, on ``…/responses``, a fixed Responses API
response; on ``…/messages``, a fixed Anthropic message), as JSON or as an SSE stream, never
validating.

Raw ASGI so that the upstream costs as little as possible and the differences between targets
stay visible. The body is read and ignored except for one byte search for ``"stream": true``.
Two request headers shape a stream (the proxies forward unknown headers untouched):
``x-bench-chunks`` (number of content chunks, default 20) and ``x-bench-pace-ms`` (pause
between chunks, default 0). The first chunk leaves with the response headers, unpaced, so that
time to first chunk measures the path and not the pacing.
"""

from __future__ import annotations

import asyncio

from starlette.types import Receive, Scope, Send

COMPLETION = (
    b'{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"bench",'
    b'"choices":[{"index":0,"message":{"role":"assistant","content":"The answer is 42."},'
    b'"logprobs":null,"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":12,"completion_tokens":6,"total_tokens":18}}'
)
CHUNK = (
    b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,'
    b'"model":"bench","choices":[{"index":0,"delta":{"content":"token "},'
    b'"finish_reason":null}]}\n\n'
)
DONE = b"data: [DONE]\n\n"
RESPONSE = (
    b'{"id":"resp_bench","object":"response","created_at":1700000000,"status":"completed",'
    b'"model":"bench","output":[{"type":"message","id":"msg_bench","status":"completed",'
    b'"role":"assistant","content":[{"type":"output_text","text":"The answer is 42.",'
    b'"annotations":[]}]}],"usage":{"input_tokens":12,"output_tokens":6,"total_tokens":18}}'
)
RESPONSE_DELTA = (
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
    b'"item_id":"msg_bench","output_index":0,"content_index":0,"delta":"token "}\n\n'
)
RESPONSE_DONE = b"event: response.completed\ndata: " + (
    b'{"type":"response.completed","response":' + RESPONSE + b"}\n\n"
)


MESSAGE = (
    b'{"id":"msg_bench","type":"message","role":"assistant","model":"bench","content":'
    b'[{"type":"text","text":"The answer is 42."}],"stop_reason":"end_turn",'
    b'"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":6}}'
)
MESSAGE_DELTA = (
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"text_delta","text":"token "}}\n\n'
)
MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
GENERATED = (
    b'{"candidates":[{"content":{"parts":[{"text":"The answer is 42."}],"role":"model"},'
    b'"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,'
    b'"candidatesTokenCount":6,"totalTokenCount":18},"modelVersion":"bench"}'
)
GENERATED_CHUNK = b'data: {"candidates":[{"content":{"parts":[{"text":"token "}]}}]}\r\n\r\n'
GENERATED_LAST = b'data: {"candidates":[{"finishReason":"STOP"}]}\r\n\r\n'


def _json_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]


#: the path's last segment -> (JSON body, stream event, last stream event); chat otherwise
_ANSWERS = {
    "completions": (COMPLETION, CHUNK, DONE),
    "responses": (RESPONSE, RESPONSE_DELTA, RESPONSE_DONE),
    "messages": (MESSAGE, MESSAGE_DELTA, MESSAGE_STOP),
    "generateContent": (GENERATED, GENERATED_CHUNK, GENERATED_LAST),
}
_HEADERS = {body: _json_headers(body) for body in (COMPLETION, RESPONSE, MESSAGE, GENERATED)}
_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


def _wants_stream(body: bytes) -> bool:
    return b'"stream":true' in body or b'"stream": true' in body


def _stream_shape(headers: list[tuple[bytes, bytes]]) -> tuple[int, float]:
    chunks, pace_ms = 20, 0.0
    for name, value in headers:
        if name == b"x-bench-chunks":
            chunks = int(value)
        elif name == b"x-bench-pace-ms":
            pace_ms = float(value)
    return chunks, pace_ms / 1000


async def _drain(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(parts)


async def _stream(send: Send, events: tuple[bytes, bytes], chunks: int, pace: float) -> None:
    chunk, last = events
    await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
    for n in range(chunks):
        if n and pace:
            await asyncio.sleep(pace)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": last, "more_body": False})


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """The fake provider: ``…/responses`` gets the fixed Responses answer, ``…/messages`` the
    fixed Anthropic message, ``…:generateContent`` Gemini's, every other HTTP request the fixed
    chat completion."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    body = await _drain(receive)
    last_segment = scope["path"].rpartition("/")[2].rpartition(":")[2]
    answer, chunk, last = _ANSWERS.get(last_segment, _ANSWERS["completions"])
    if _wants_stream(body):
        await _stream(send, (chunk, last), *_stream_shape(scope["headers"]))
        return
    await send({"type": "http.response.start", "status": 200, "headers": _HEADERS[answer]})
    await send({"type": "http.response.body", "body": answer})


async def lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
