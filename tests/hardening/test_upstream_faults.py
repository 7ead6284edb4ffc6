"""An upstream that misbehaves at the byte level: each fault gets a defined answer, and leaves
nothing behind (no task in the proxy's loop, no connection open on the upstream's side).

What a client sees (see also :func:`proxy.relay.asgi.relay_body`):

- nothing usable before the response headers (refused, reset, closed, garbage status line,
  oversized header): 502 ``upstream_unavailable``; silence past ``read_timeout`` (no answer,
  headers that stop halfway): 504 ``upstream_timeout``; both in the OpenAI error shape;
- whatever parses as HTTP is relayed as it came: invalid JSON, non-SSE bytes, 429/5xx with
  ``retry-after``, headers trickled slower than a packet but faster than ``read_timeout``;
- a streamed (unsized) body broken after the headers: the bytes received so far, then an
  OpenAI-style ``data: {"error": …}`` event when the break falls between events, then a clean
  end; a sized body broken early: the connection is cut, so the client cannot take it as whole.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Awaitable, Callable, Iterator

import httpx
import orjson
import pytest

from proxy.app import create_app
from tests.e2e.conftest import proxy_settings
from tests.hardening.conftest import (
    SSE_HEAD,
    Conn,
    Guard,
    Probe,
    RawUpstream,
    chunk,
    closed_port_url,
    eventually,
    response,
)
from tests.servers import running

READ_TIMEOUT = 0.5
BODY = orjson.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
EVENTS = b'data: {"n": 1}\n\ndata: {"n": 2}\n\n'
GARBAGE_SSE = b"\x00\xff not an event stream \r\r\n: nor JSON {\n"
RATE_LIMITED = b'{"error": {"message": "slow down", "type": "requests", "code": "rate_limit"}}'


async def hang(conn: Conn) -> None:
    """Reads the request and says nothing, ever."""


async def close_without_answer(conn: Conn) -> None:
    conn.writer.close()
    conn.reset_done = True


async def reset_before_answer(conn: Conn) -> None:
    conn.reset()


async def slow_headers(conn: Conn) -> None:
    head, body = response(body=b'{"slow": true}').split(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        await conn.send(line + b"\r\n", pause=READ_TIMEOUT / 5)
    await conn.send(b"\r\n" + body)


async def stalled_headers(conn: Conn) -> None:
    await conn.send(b"HTTP/1.1 200 OK\r\ncontent-type: appl")


async def garbage_status(conn: Conn) -> None:
    await conn.send(b"HELLO, I AM NOT HTTP\r\n\r\n")


async def huge_header(conn: Conn) -> None:
    await conn.send(response(headers=(b"x-huge: " + b"a" * 100_000,)))


async def invalid_json(conn: Conn) -> None:
    await conn.send(response(body=b'{"id": "chatcmpl-1", "choices": [tru'))


async def not_sse(conn: Conn) -> None:
    await conn.send(SSE_HEAD + chunk(GARBAGE_SSE) + b"0\r\n\r\n")


async def rate_limited(conn: Conn) -> None:
    headers = (b"retry-after: 7", b"x-ratelimit-remaining-requests: 0")
    await conn.send(response(b"429 Too Many Requests", RATE_LIMITED, headers))


async def overloaded(conn: Conn) -> None:
    headers = (b"retry-after: Wed, 21 Oct 2037 07:28:00 GMT",)
    await conn.send(response(b"503 Service Unavailable", b'{"error": "busy"}', headers))


async def reset_after_headers_sse(conn: Conn) -> None:
    await conn.send(SSE_HEAD, pause=0.05)
    conn.reset()


async def reset_between_events(conn: Conn) -> None:
    await conn.send(SSE_HEAD + chunk(EVENTS), pause=0.05)
    conn.reset()


async def reset_mid_event(conn: Conn) -> None:
    await conn.send(SSE_HEAD + chunk(EVENTS + b'data: {"n": 3'), pause=0.05)
    conn.reset()


async def bad_chunking(conn: Conn) -> None:
    await conn.send(SSE_HEAD + chunk(EVENTS), pause=0.05)
    await conn.send(b"zz\r\nnot a chunk size\r\n", pause=0.05)


async def reset_sized_body(conn: Conn) -> None:
    await conn.send(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n" + b'{"partial": ', 0.05)
    conn.reset()


#: A refusal the proxy reads whole before deciding on a retry (repair-on-reject.md).
REFUSAL = b'{"error": {"message": "Invalid parameter: messages with role \'tool\' must be a '


async def refusal_stalled_halfway(conn: Conn) -> None:
    """A 400 whose body stops halfway and stays silent: the proxy's read of it times out."""
    head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
    await conn.send(head + b"content-length: %d\r\n\r\n" % (len(REFUSAL) * 2) + REFUSAL)


async def refusal_broken_halfway(conn: Conn) -> None:
    """A 400 whose chunked body turns to garbage halfway (the connection itself stays up)."""
    head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
    await conn.send(head + b"transfer-encoding: chunked\r\n\r\n" + chunk(REFUSAL), pause=0.05)
    await conn.send(b"zz\r\nnot a chunk size\r\n")


FAULTS: dict[str, Callable[[Conn], Awaitable[None]]] = {
    f.__name__: f
    for f in (
        hang,
        close_without_answer,
        reset_before_answer,
        slow_headers,
        stalled_headers,
        garbage_status,
        huge_header,
        invalid_json,
        not_sse,
        rate_limited,
        overloaded,
        reset_after_headers_sse,
        reset_between_events,
        reset_mid_event,
        bad_chunking,
        reset_sized_body,
        refusal_stalled_halfway,
        refusal_broken_halfway,
    )
}


async def dispatch(conn: Conn) -> None:
    """The fault the request names in ``x-fault`` (the proxy forwards unknown headers)."""
    request = await conn.request()
    await FAULTS[request.headers["x-fault"]](conn)


@pytest.fixture(scope="module")
def stand() -> Iterator[tuple[Guard, RawUpstream]]:
    """One scripted upstream and one proxy in front of it (read timeout 0.5 s) for the module."""
    upstream = RawUpstream(dispatch)
    settings = proxy_settings(
        {"openai": upstream.url}, upstream_overrides={"read_timeout": READ_TIMEOUT}
    )
    app = create_app(settings)
    probe = Probe(app)
    try:
        with running(probe, timeout_graceful_shutdown=1) as url, httpx.Client() as client:
            guard = Guard(url, app, probe)
            assert (
                client.post(
                    guard.v1 + "/chat/completions",
                    content=BODY,
                    headers={"x-fault": "invalid_json"},
                ).status_code
                == 200
            )
            eventually(lambda: upstream.open == 0, what="the warm-up connection closed")
            guard.mark_baseline()
            yield guard, upstream
    finally:
        upstream.close()


def _post(http: httpx.Client, guard: Guard, fault: str, **extra: str) -> httpx.Response:
    headers = {"x-fault": fault, "content-type": "application/json", **extra}
    return http.post(guard.v1 + "/chat/completions", content=BODY, headers=headers)


class Errors(logging.Handler):
    """ERROR records of asyncio's logger ("Future exception was never retrieved"…)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture(autouse=True)
def loop_errors() -> Iterator[Errors]:
    handler = Errors()
    logging.getLogger("asyncio").addHandler(handler)
    yield handler
    logging.getLogger("asyncio").removeHandler(handler)


def _nothing_left(guard: Guard, upstream: RawUpstream, errors: Errors) -> None:
    """No connection open upstream, no task left in the proxy, nothing the loop complained of."""
    eventually(lambda: upstream.open == 0, what="the proxy closed its upstream connection")
    guard.settled()
    gc.collect()  # an unretrieved exception is reported when its future is collected
    assert not errors.records, [r.getMessage() for r in errors.records]


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        ("hang", 504, "upstream_timeout"),
        ("stalled_headers", 504, "upstream_timeout"),
        ("close_without_answer", 502, "upstream_unavailable"),
        ("reset_before_answer", 502, "upstream_unavailable"),
        ("garbage_status", 502, "upstream_unavailable"),
        ("huge_header", 502, "upstream_unavailable"),
    ],
)
def test_no_usable_answer_is_the_proxys_own_error(
    *,
    http: httpx.Client,
    stand: tuple[Guard, RawUpstream],
    loop_errors: Errors,
    fault: str,
    status: int,
    code: str,
) -> None:
    guard, upstream = stand
    started = time.perf_counter()
    got = _post(http, guard, fault)
    elapsed = time.perf_counter() - started
    assert got.status_code == status, got.text
    error = got.json()["error"]
    assert (error["type"], error["code"]) == ("upstream_error", code)
    assert isinstance(error["message"], str)
    assert "Traceback" not in got.text
    if status == 504:
        assert READ_TIMEOUT * 0.8 < elapsed < READ_TIMEOUT + 2
    else:
        assert elapsed < 2
    _nothing_left(guard, upstream, loop_errors)


@pytest.mark.parametrize(
    ("fault", "status", "body", "headers"),
    [
        ("slow_headers", 200, b'{"slow": true}', {}),
        ("invalid_json", 200, b'{"id": "chatcmpl-1", "choices": [tru', {}),
        ("not_sse", 200, GARBAGE_SSE, {"content-type": "text/event-stream"}),
        ("rate_limited", 429, RATE_LIMITED, {"retry-after": "7"}),
        ("overloaded", 503, b'{"error": "busy"}', {"retry-after": "Wed, 21 Oct 2037 07:28:00 GMT"}),
    ],
)
def test_whatever_parses_as_http_is_relayed_as_it_came(
    *,
    http: httpx.Client,
    stand: tuple[Guard, RawUpstream],
    loop_errors: Errors,
    fault: str,
    status: int,
    body: bytes,
    headers: dict[str, str],
) -> None:
    guard, upstream = stand
    got = _post(http, guard, fault)
    assert got.status_code == status
    assert got.content == body
    for name, value in headers.items():
        assert got.headers[name] == value
    if fault == "rate_limited":
        assert got.headers["x-ratelimit-remaining-requests"] == "0"
    _nothing_left(guard, upstream, loop_errors)


@pytest.mark.parametrize(
    ("fault", "kept", "error_event"),
    [
        ("reset_after_headers_sse", b"", True),
        ("reset_between_events", EVENTS, True),
        ("reset_mid_event", EVENTS + b'data: {"n": 3', False),
        ("bad_chunking", EVENTS, True),
    ],
)
def test_a_broken_stream_ends_cleanly(
    *,
    http: httpx.Client,
    stand: tuple[Guard, RawUpstream],
    loop_errors: Errors,
    fault: str,
    kept: bytes,
    error_event: bool,
) -> None:
    guard, upstream = stand
    got = _post(http, guard, fault)  # a clean end: httpx reads the whole chunked body
    assert got.status_code == 200
    assert got.headers["content-type"] == "text/event-stream"
    assert got.content.startswith(kept)
    tail = got.content[len(kept) :]
    if error_event:  # between events: one OpenAI-style error event the SDKs raise on
        assert tail.startswith(b"data: {")
        assert tail.endswith(b"\n\n")
        error = orjson.loads(tail[len(b"data: ") :])["error"]
        assert error["code"] == "upstream_unavailable"
    else:  # inside an event: nothing can be added without corrupting it
        assert tail == b""
    _nothing_left(guard, upstream, loop_errors)


def test_a_sized_body_cut_short_is_not_passed_off_as_whole(
    http: httpx.Client, stand: tuple[Guard, RawUpstream], loop_errors: Errors
) -> None:
    guard, upstream = stand
    with pytest.raises(httpx.RemoteProtocolError):
        _post(http, guard, "reset_sized_body")
    _nothing_left(guard, upstream, loop_errors)


def test_connection_refused_is_502_and_leaves_nothing(
    http: httpx.Client, start_guard: Callable[..., Guard]
) -> None:
    guard = start_guard({"openai": closed_port_url()})
    guard.mark_baseline()
    for _ in range(3):
        got = http.post(guard.v1 + "/chat/completions", content=BODY)
        assert got.status_code == 502
        assert got.json()["error"]["code"] == "upstream_unavailable"
    guard.settled()


@pytest.mark.parametrize(
    ("fault", "status"),
    [("refusal_stalled_halfway", 504), ("refusal_broken_halfway", 502)],
)
def test_a_refusal_read_that_fails_halfway_leaves_no_connection_open(
    *,
    http: httpx.Client,
    stand: tuple[Guard, RawUpstream],
    loop_errors: Errors,
    fault: str,
    status: int,
) -> None:
    """The retry reads a refusal before anything reaches the client; when that read fails,
    the client gets the proxy's own error and the upstream response is closed at once, not
    left to the garbage collector (issue 26 item 4). Counted from the upstream's side."""
    guard, upstream = stand
    for _ in range(3):
        got = _post(http, guard, fault)
        assert got.status_code == status, got.text
        # Within a moment, not whenever a garbage collection comes by.
        eventually(lambda: upstream.open == 0, within=0.5, what="the refusal's connection closed")
    _nothing_left(guard, upstream, loop_errors)
