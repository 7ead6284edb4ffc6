"""A client that misbehaves: hangs up early, or sends its body a byte at a time (slowloris).

- A client gone before the upstream answered, or in the middle of a stream, cancels the
  upstream request at once: the upstream sees its connection close, the proxy's tasks end.
- A body that takes longer than ``server.body_timeout`` in all gets a 408 in the OpenAI error
  shape and the connection is closed: uvicorn's ``timeout_keep_alive`` bounds idle
  connections, not a body trickling in.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable

import orjson
import pytest

from proxy.settings import load_settings
from tests.hardening.conftest import SSE_HEAD, Conn, Guard, RawUpstream, chunk, eventually

BODY = orjson.dumps(
    {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": True}
)
PROMPTLY = 1.0  # seconds from the client's hang-up to the upstream's connection closing


async def never_answers(conn: Conn) -> None:
    await conn.request()


async def streams_forever(conn: Conn) -> None:
    await conn.request()
    await conn.send(SSE_HEAD)
    n = 0
    while True:  # until writing fails: the proxy hung up
        n += 1
        await conn.send(chunk(b'data: {"n": %d}\n\n' % n), pause=0.02)


def connect(guard: Guard) -> socket.socket:
    host, port = guard.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def head(path: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
        f"content-length: {length}\r\n\r\n"
    ).encode()


def read_all(sock: socket.socket) -> bytes:
    """Everything until the server closes the connection (bounded by the socket timeout)."""
    data = b""
    while piece := sock.recv(65536):
        data += piece
    return data


def hang_up(sock: socket.socket) -> float:
    sock.close()
    return time.monotonic()


def test_a_client_gone_before_the_answer_cancels_the_upstream_request(
    start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream]
) -> None:
    upstream = raw_upstream(never_answers)
    guard = start_guard({"openai": upstream.url})
    guard.mark_baseline()
    sock = connect(guard)
    sock.sendall(head("/v1/chat/completions", len(BODY)) + BODY)
    eventually(lambda: len(upstream.requests) == 1, what="the request reached the upstream")
    gone = hang_up(sock)
    eventually(lambda: upstream.open == 0, within=5, what="the upstream saw the proxy hang up")
    assert upstream.closed_at[0] - gone < PROMPTLY
    guard.settled()


def test_a_client_gone_mid_stream_cancels_the_upstream_request(
    start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream]
) -> None:
    upstream = raw_upstream(streams_forever)
    guard = start_guard({"openai": upstream.url})
    guard.mark_baseline()
    sock = connect(guard)
    sock.sendall(head("/v1/chat/completions", len(BODY)) + BODY)
    received = b""
    while b'data: {"n": 2}' not in received:
        received += sock.recv(65536)
    assert received.startswith(b"HTTP/1.1 200 ")
    gone = hang_up(sock)
    eventually(lambda: upstream.open == 0, within=5, what="the upstream saw the proxy hang up")
    assert upstream.closed_at[0] - gone < PROMPTLY
    guard.settled()


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/openai/v1/embeddings"])
@pytest.mark.parametrize("trickle", [True, False], ids=["one-byte-at-a-time", "no-body-at-all"])
def test_a_slow_body_gets_408_and_the_connection_closed(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    path: str,
    trickle: bool,
) -> None:
    upstream = raw_upstream(never_answers)
    guard = start_guard({"openai": upstream.url}, server={"body_timeout": 0.5})
    guard.mark_baseline()
    sock = connect(guard)
    started = time.monotonic()
    sock.sendall(head(path, len(BODY)))
    answer = b""
    for byte in BODY if trickle else b"":
        try:
            sock.sendall(bytes([byte]))
        except OSError:  # the server hung up: its answer is waiting to be read
            break
        if answer := _poll(sock):
            break
    answer += read_all(sock)  # the server closes the connection after its answer
    elapsed = time.monotonic() - started
    sock.close()

    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout", answer
    headers, _, body = rest.partition(b"\r\n\r\n")
    assert b"connection: close" in headers.lower()
    error = orjson.loads(body)["error"]
    assert error == {
        "message": "The request body did not arrive within 0.5 s (server.body_timeout).",
        "type": "invalid_request_error",
        "param": None,
        "code": "request_timeout",
    }
    assert 0.45 < elapsed < 2.0
    assert upstream.accepted == 0
    guard.settled()


def _poll(sock: socket.socket) -> bytes:
    """What the server sent so far (waiting 50 ms: the pace of the trickle)."""
    sock.settimeout(0.05)
    try:
        return sock.recv(65536)
    except TimeoutError:
        return b""
    finally:
        sock.settimeout(5)


def test_a_slow_body_that_arrives_in_time_is_served(
    start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream]
) -> None:
    async def answers(conn: Conn) -> None:
        await conn.request()
        await conn.send(SSE_HEAD + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    upstream = raw_upstream(answers)
    guard = start_guard({"openai": upstream.url}, server={"body_timeout": 2.0})
    sock = connect(guard)
    sock.sendall(head("/v1/chat/completions", len(BODY)))
    for start in range(0, len(BODY), 16):  # ~0.5 s in all, well within the timeout
        sock.sendall(BODY[start : start + 16])
        time.sleep(0.5 / (len(BODY) / 16))
    answer = b""
    while not answer.endswith(b"0\r\n\r\n"):
        answer += sock.recv(65536)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 200 OK")
    assert b"data: [DONE]" in answer
    assert upstream.requests[0].body == BODY


def test_a_client_gone_while_trickling_its_body_is_logged_as_499(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream = raw_upstream(never_answers)
    guard = start_guard({"openai": upstream.url}, server={"body_timeout": 5.0})
    guard.mark_baseline()
    with caplog.at_level(logging.INFO, logger="toolcall_guard"):
        sock = connect(guard)
        sock.sendall(head("/v1/chat/completions", len(BODY)) + BODY[:10])
        time.sleep(0.1)
        hang_up(sock)
        guard.settled()
        eventually(lambda: _lines(caplog) != [], what="the request's log line")
    [line] = _lines(caplog)
    assert (line["status"], line["end"]) == (499, "client_gone")
    assert upstream.accepted == 0


def _lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [getattr(r, "event", {}) for r in caplog.records if r.name == "toolcall_guard"]


def test_the_body_timeout_defaults_to_30_seconds() -> None:
    assert load_settings().server.body_timeout == 30.0


def test_the_guard_loop_is_the_one_counted(start_guard: Callable[..., Guard]) -> None:
    """The probe really looks into the server's loop: it sees the writer's own tasks."""
    guard = start_guard({"openai": "http://127.0.0.1:9/v1"})
    tasks = guard.probe.tasks()
    assert "RecordWriter._run" in tasks
