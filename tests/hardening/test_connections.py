"""Bounded before auth (issue 24, item 3): header bytes and count (431), header time, idle
keep-alive and connections at once, over real sockets against the server ``serve`` runs
(uvicorn with :func:`proxy.server.connection_options`), with small limits so the tests are fast.
"""

from __future__ import annotations

import pickle
import socket
import time
from collections.abc import Iterator

import orjson
import pytest

from proxy.app import create_app
from proxy.connection import GuardedHttpToolsProtocol
from proxy.server import connection_options, uvicorn_options
from tests.e2e.conftest import proxy_settings
from tests.servers import running

HEADER_TIMEOUT = 1.0
KEEP_ALIVE = 1.0
#: Closing "within the timeout" allows this much for scheduling on a busy machine.
SLACK = 1.5


@pytest.fixture(scope="module")
def address() -> Iterator[tuple[str, int]]:
    settings = proxy_settings(
        {"openai": "http://127.0.0.1:9/v1"},
        server={
            "max_header_bytes": 2048,
            "max_headers": 16,
            "header_timeout": HEADER_TIMEOUT,
            "keep_alive_timeout": KEEP_ALIVE,
            "max_connections": 2,
        },
    )
    with running(create_app(settings), **connection_options(settings.server)) as url:
        host, port = url.removeprefix("http://").split(":")
        yield host, int(port)


def _connect(address: tuple[str, int]) -> socket.socket:
    return socket.create_connection(address, timeout=5)


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while piece := sock.recv(65536):
        data += piece
    return data


def _closed_after(sock: socket.socket, started: float, trickle: bool = False) -> float:
    """Seconds from ``started`` until the proxy closes ``sock`` (sending a byte every 0.25 s
    when ``trickle``); fails after 10 s."""
    sock.settimeout(0.25)
    while time.monotonic() - started < 10:
        try:
            if not sock.recv(65536):
                return time.monotonic() - started
        except TimeoutError:
            if trickle:
                sock.sendall(b"x")
        except ConnectionResetError:
            return time.monotonic() - started
    pytest.fail("the proxy kept the connection open for 10 s")


def test_a_head_past_the_byte_limit_gets_431(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-big: " + b"a" * 4096)
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 431 ")
    error = orjson.loads(answer.partition(b"\r\n\r\n")[2])["error"]
    assert error["code"] == "request_headers_too_large"
    assert "server.max_header_bytes" in error["message"]


def test_a_whole_head_past_the_limit_in_one_read_gets_431(address: tuple[str, int]) -> None:
    head = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-big: " + b"a" * 3000 + b"\r\n\r\n"
    with _connect(address) as sock:
        sock.sendall(head)
        assert _answer(sock).startswith(b"HTTP/1.1 431 ")


def test_too_many_headers_get_431(address: tuple[str, int]) -> None:
    headers = b"".join(b"x-h%d: 1\r\n" % i for i in range(20))
    with _connect(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n" + headers + b"\r\n")
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b"server.max_headers" in answer


def test_a_huge_header_is_cut_off_not_buffered(address: tuple[str, int]) -> None:
    """64 MiB of one header value: the proxy closes after a few KiB instead of reading on."""
    piece = b"a" * 65536
    sent = 0
    with _connect(address) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nx-big: ")
        try:
            while sent < 64 * 1024 * 1024:
                sent += sock.send(piece)
        except OSError:  # reset or broken pipe: the proxy closed its end
            pass
    # Loopback socket buffers take a few MiB before the sender notices the close.
    assert sent < 32 * 1024 * 1024


def test_a_connection_that_sends_nothing_is_closed(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        assert _closed_after(sock, time.monotonic()) < HEADER_TIMEOUT + SLACK


def test_a_head_sent_a_byte_at_a_time_is_closed_in_time(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-slow: ")
        assert _closed_after(sock, started, trickle=True) < HEADER_TIMEOUT + SLACK


def test_the_next_head_on_a_kept_alive_connection_is_timed_too(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nx-slow: ")
        assert _closed_after(sock, started, trickle=True) < HEADER_TIMEOUT + SLACK


def test_a_later_head_is_given_its_whole_time(address: tuple[str, int]) -> None:
    """The clock of a kept-alive connection's next head runs from that head, not from the
    connection: the timer armed for the first is not the second's deadline."""
    with _connect(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        time.sleep(HEADER_TIMEOUT / 2)  # the next head begins halfway through the first's time
        started = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nx-slow: ")
        assert _closed_after(sock, started, trickle=True) >= HEADER_TIMEOUT * 0.9


def test_the_head_timeout_does_not_cut_the_body_or_the_answer(address: tuple[str, int]) -> None:
    """The clock stops once the head is in: a body slower than it is server.body_timeout's."""
    body = b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}'
    with _connect(address) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\n"
            b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
        )
        time.sleep(HEADER_TIMEOUT + 0.5)  # the pace of this client, past the head's timeout
        sock.sendall(body)
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 502 ")  # answered (the upstream is down), not cut


def test_an_idle_kept_alive_connection_is_closed(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        assert _closed_after(sock, time.monotonic()) < KEEP_ALIVE + SLACK


def test_requests_within_the_limits_are_served(address: tuple[str, int]) -> None:
    with _connect(address) as sock:
        for _ in range(3):  # kept alive between requests
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nx-ok: " + b"a" * 1024)
            sock.sendall(b"\r\n\r\n")
            assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")


def test_connections_past_the_limit_get_503(address: tuple[str, int]) -> None:
    request = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n"
    with _connect(address) as first, _connect(address) as second:
        first.sendall(b"GET /hea")  # open, within the header timeout
        second.sendall(b"GET /hea")
        with _connect(address) as third:
            third.sendall(request)
            answer = _answer(third)
            assert answer.startswith(b"HTTP/1.1 503 ")
            error = orjson.loads(answer.partition(b"\r\n\r\n")[2])["error"]
            assert error["code"] == "overloaded"  # the OpenAI shape SDKs read, not plain text
        with _connect(address) as fourth:  # the Messages API's clients get theirs
            fourth.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: localhost\r\n")
            fourth.sendall(b"content-length: 2\r\n\r\n{}")
            answer = _answer(fourth)
            assert answer.startswith(b"HTTP/1.1 503 ")
            assert orjson.loads(answer.partition(b"\r\n\r\n")[2])["type"] == "error"
    deadline = time.monotonic() + 5  # the others gone (their close seen), served again
    while _status(address, request) != b"200" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _status(address, request) == b"200"


def _status(address: tuple[str, int], request: bytes) -> bytes:
    with _connect(address) as sock:
        sock.sendall(request)
        return sock.recv(65536)[9:12]


def test_serve_runs_the_guarded_protocol_in_every_worker() -> None:
    """``--workers`` pickles uvicorn's config into each process: the protocol factory too."""
    options = uvicorn_options(proxy_settings({"openai": "http://127.0.0.1:9/v1"}))
    factory = pickle.loads(pickle.dumps(options["http"]))
    assert factory.func is GuardedHttpToolsProtocol
    assert factory.keywords["limits"].max_bytes == 32 * 1024
