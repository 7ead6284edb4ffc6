"""An upstream that breaks in every way the proxy must tell truthfully, on a real socket.

Each request names its fault in ``x-fault`` (the proxy forwards unknown headers); the answer is
a chat completion or a Responses object, JSON (sized) or an event stream (chunked), as the
request asks. Streams are cut between events, so the proxy can end them with an error event.
"""

from __future__ import annotations

import asyncio

import orjson

from tests.hardening.conftest import SSE_HEAD, Conn, Request, chunk, response

#: The upstream's read timeout under test: a stall mid-body outlasts it.
READ_TIMEOUT = 0.5
#: A refusal the signature catalogue knows (``proxy/core/signatures.py``), per path.
REFUSALS = {
    "chat": "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
    "message with 'tool_calls'.",
    "responses": "No tool call found for function call output with call_id call_lost.",
}


def _api(request: Request) -> str:
    return "responses" if request.line.split(b" ")[1].endswith(b"/responses") else "chat"


def _events(api: str, count: int) -> list[bytes]:
    if api == "chat":
        return [
            b'data: {"id":"chatcmpl-1","choices":[{"delta":{"content":"w%d"}}]}\n\n' % n
            for n in range(count)
        ] + [b"data: [DONE]\n\n"]
    done = b'event: response.completed\ndata: {"type":"response.completed"}\n\n'
    return [
        b'event: response.output_text.delta\ndata: {"delta":"w%d"}\n\n' % n for n in range(count)
    ] + [done]


def _json(api: str) -> bytes:
    if api == "chat":
        return b'{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0}]}'
    return b'{"id":"resp_1","object":"response","status":"completed","output":[]}'


def answer(request: Request, events: int = 3) -> tuple[bytes, list[bytes]]:
    """The head and the body parts of a whole answer to ``request``."""
    api = _api(request)
    if orjson.loads(request.body).get("stream"):
        parts = [chunk(event) for event in _events(api, events)]
        return SSE_HEAD, [*parts[:-1], parts[-1] + b"0\r\n\r\n"]
    body = _json(api)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
    return head + b"content-length: %d\r\n\r\n" % len(body), [body[:20], body[20:]]


async def ok(conn: Conn, request: Request) -> None:
    head, parts = answer(request)
    await conn.send(head + b"".join(parts))


async def slow(conn: Conn, request: Request) -> None:
    head, parts = answer(request)
    await conn.send(head, pause=READ_TIMEOUT / 10)
    for part in parts:  # each gap well within the read timeout
        await conn.send(part, pause=READ_TIMEOUT / 10)


async def reset_before(conn: Conn, request: Request) -> None:
    conn.reset()


async def stall_before(conn: Conn, request: Request) -> None:
    await asyncio.sleep(READ_TIMEOUT * 2.5)


async def cut_mid(conn: Conn, request: Request) -> None:
    head, parts = answer(request)
    await conn.send(head + parts[0], pause=0.02)
    conn.reset()


async def stall_mid(conn: Conn, request: Request) -> None:
    head, parts = answer(request)
    await conn.send(head + parts[0])
    await asyncio.sleep(READ_TIMEOUT * 2.5)


async def overloaded(conn: Conn, request: Request) -> None:
    body = b'{"error": {"message": "overloaded", "type": "server_error", "code": null}}'
    await conn.send(response(b"503 Service Unavailable", body, (b"retry-after: 1",)))


async def rate_limited(conn: Conn, request: Request) -> None:
    body = b'{"error": {"message": "slow down", "type": "requests", "code": "rate_limit"}}'
    await conn.send(response(b"429 Too Many Requests", body, (b"retry-after: 1",)))


async def refused(conn: Conn, request: Request) -> None:
    error = {"message": REFUSALS[_api(request)], "type": "invalid_request_error"}
    body = orjson.dumps({"error": {**error, "param": None, "code": None}})
    await conn.send(response(b"400 Bad Request", body))


async def streams_on(conn: Conn, request: Request) -> None:
    """A long stream (for a client that leaves after its first event)."""
    head, parts = answer(request, events=100)
    await conn.send(head)
    for part in parts:
        await conn.send(part, pause=0.05)


FAULTS = {
    f.__name__: f
    for f in (
        ok,
        slow,
        reset_before,
        stall_before,
        cut_mid,
        stall_mid,
        overloaded,
        rate_limited,
        refused,
        streams_on,
    )
}


async def dispatch(conn: Conn) -> None:
    """Serve one request with the fault it names."""
    request = await conn.request()
    await FAULTS[request.headers["x-fault"]](conn, request)
