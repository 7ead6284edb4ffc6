"""Misbehaving peers on loopback, and a proxy whose event loop the tests can look into.

- :class:`RawUpstream`: a tiny asyncio TCP server (its own thread and loop) that answers each
  connection with a scripted behaviour written at the byte level (hang, trickle, reset, garbage)
  and counts the connections still open *from its side*: one the proxy forgot stays counted.
- :class:`Guard` (``start_guard``): the real app under uvicorn on a loopback port, wrapped in a
  :class:`Probe` that remembers the server's event loop, so a test can count the asyncio tasks
  alive in it (back to the baseline after every fault, or something leaked).
- :class:`TcpRelay`: a loopback port relayed to PostgreSQL that a test stops ("the server was
  killed": the listener closes and every relayed connection is cut) and starts again.
- For the security tests: chat bodies, every log line captured (:class:`Lines`), raw bytes
  sent to the proxy past any client library (:func:`raw_exchange`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import orjson
import pytest
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from proxy.app import create_app
from proxy.emulator import create_emulator_app
from proxy.logs import JsonFormatter, TextFormatter
from proxy.repairlog import RepairLog
from tests.conftest import _PROVIDER_VARIABLES
from tests.e2e.conftest import closed_port_url, proxy_settings
from tests.repairlog.conftest import pg_server, pg_url
from tests.servers import running

__all__ = ["closed_port_url", "pg_server", "pg_url"]  # fixtures and helpers re-exported

T = TypeVar("T")


@pytest.fixture(scope="module", autouse=True)
def _isolated_module(empty_config: Path) -> Iterator[None]:
    """``tests/conftest.py``'s isolation, for module-scoped fixtures too: they are set up before
    any function-scoped autouse fixture, so without this they would read the deployment config
    (and a developer's provider keys)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("TOOLCALL_GUARD_") or name in _PROVIDER_VARIABLES:
                patch.delenv(name)
        patch.setenv("TOOLCALL_GUARD_CONFIG", str(empty_config))
        yield


def eventually(condition: Callable[[], bool], within: float = 5.0, what: str = "") -> None:
    """Wait until ``condition()`` holds; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not true within {within} s: {what or condition}")
        time.sleep(0.01)


class LoopThread:
    """An asyncio loop running in a daemon thread; :meth:`call` runs a coroutine in it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 10.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


# --- upstreams that misbehave ------------------------------------------------------------


@dataclass
class Request:
    """One HTTP/1.1 request as the fake upstream read it."""

    line: bytes
    headers: dict[str, str]
    body: bytes


class Conn:
    """One accepted connection, as a behaviour sees it."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: list[Request]
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.seen = seen  # every request read, on every connection
        self.reset_done = False

    async def request(self) -> Request:
        head = await self.reader.readuntil(b"\r\n\r\n")
        line, *lines = head[:-4].split(b"\r\n")
        headers = {}
        for raw in lines:
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await self.reader.readexactly(int(headers.get("content-length", "0")))
        self.seen.append(request := Request(line, headers, body))
        return request

    async def send(self, data: bytes, pause: float = 0.0) -> None:
        self.writer.write(data)
        await self.writer.drain()
        if pause:
            await asyncio.sleep(pause)

    def reset(self) -> None:
        """Abort with a TCP RST (SO_LINGER 0), as a crashed server or a middlebox would."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()
        self.reset_done = True


Behaviour = Callable[[Conn], Awaitable[None]]


class RawUpstream:
    """A loopback HTTP/1.1 server scripted at the byte level; see the module docstring.

    After its behaviour, a connection stays counted in :attr:`open` until the *peer* closes it
    (or the behaviour reset it): the count going back to 0 proves the proxy let go.
    """

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests: list[Request] = []
        self.accepted = 0
        self.closed_at: list[float] = []
        self._open = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._lock = threading.Lock()
        self._runner = LoopThread("raw-upstream")
        self._server = self._runner.call(self._listen())
        self.port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"

    @property
    def open(self) -> int:
        with self._lock:
            return self._open

    async def _listen(self) -> asyncio.Server:
        return await asyncio.start_server(self._handle, "127.0.0.1", 0)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.accepted += 1
            self._open += 1
        conn = Conn(reader, writer, self.requests)
        self._writers.add(writer)
        try:
            await self.behaviour(conn)
            if not conn.reset_done:
                while await reader.read(65536):  # until the proxy closes its end
                    pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(writer)
            if not conn.reset_done:
                writer.close()
            with self._lock:
                self._open -= 1
                self.closed_at.append(time.monotonic())

    def close(self) -> None:
        async def shut() -> None:
            # Cut what is still open (the handlers then end on their own) rather than cancel
            # the handlers: asyncio's stream machinery logs a cancelled handler as an error.
            self._server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            handlers = asyncio.all_tasks() - {asyncio.current_task()}
            if handlers:
                _, stuck = await asyncio.wait(handlers, timeout=2)
                for task in stuck:
                    task.cancel()

        self._runner.call(shut())
        self._runner.close()


@pytest.fixture
def raw_upstream() -> Iterator[Callable[[Behaviour], RawUpstream]]:
    """``raw_upstream(behaviour)`` serves a :class:`RawUpstream` for the rest of the test."""
    started: list[RawUpstream] = []

    def start(behaviour: Behaviour) -> RawUpstream:
        upstream = RawUpstream(behaviour)
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        upstream.close()


def response(
    status: bytes = b"200 OK", body: bytes = b"{}", headers: tuple[bytes, ...] = ()
) -> bytes:
    """A whole HTTP/1.1 response with a content-length, closing the connection after it."""
    head = [b"HTTP/1.1 " + status, b"content-type: application/json", *headers]
    head += [b"content-length: %d" % len(body), b"connection: close"]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
)


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body."""
    return b"%x\r\n%s\r\n" % (len(data), data)


# --- the proxy under uvicorn, its loop open to inspection ---------------------------------


class Probe:
    """ASGI wrapper remembering the loop the server runs the app in (taken at lifespan start)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            self.loop = asyncio.get_running_loop()
        await self.app(scope, receive, send)

    def tasks(self) -> list[str]:
        """The names of the tasks alive in the server's loop (the counting one left out)."""
        assert self.loop is not None, "the server has not started"

        async def names() -> list[str]:
            me = asyncio.current_task()
            return sorted(t.get_coro().__qualname__ for t in asyncio.all_tasks() if t is not me)  # type: ignore[union-attr]

        return asyncio.run_coroutine_threadsafe(names(), self.loop).result(5)


@dataclass
class Guard:
    """A running proxy: its URL, the app (``app.state``) and the probe into its loop."""

    url: str
    app: FastAPI
    probe: Probe
    baseline: list[str] = field(default_factory=list)

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def mark_baseline(self) -> None:
        self.baseline = self.probe.tasks()

    def settled(self, within: float = 5.0) -> None:
        """Fail unless the loop's tasks come back to the marked baseline within ``within`` s."""
        deadline = time.monotonic() + within
        while (now := self.probe.tasks()) != self.baseline:
            if time.monotonic() > deadline:
                pytest.fail(f"tasks leaked: {now} (baseline {self.baseline})")
            time.sleep(0.02)


@pytest.fixture
def start_guard() -> Iterator[Callable[..., Guard]]:
    """``start_guard({"openai": base_url}, **settings)`` serves a proxy for the rest of the test.

    ``repair_log=`` passes a log instance to ``create_app``; ``repair_log_settings=`` goes to
    the settings' ``[repair_log]`` section (memory by default).
    """
    with ExitStack() as stack:

        def start(
            base_urls: dict[str, str],
            *,
            repair_log: RepairLog | None = None,
            repair_log_settings: dict[str, Any] | None = None,
            transport: httpx.AsyncBaseTransport | None = None,
            **overrides: Any,
        ) -> Guard:
            if repair_log_settings is not None:
                overrides["repair_log"] = repair_log_settings
            settings = proxy_settings(base_urls, **overrides)
            app = create_app(settings, transport=transport, repair_log=repair_log)
            probe = Probe(app)
            url = stack.enter_context(running(probe, timeout_graceful_shutdown=1))
            return Guard(url, app, probe)

        yield start


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10.0) as client:
        yield client


# --- requests, log capture and raw exchanges -----------------------------------------------

#: A history the default policies repair (a tool result whose call was lost).
ORPHAN = [
    {"role": "user", "content": "Read a.txt"},
    {"role": "assistant", "content": ""},
    {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
]
CLEAN = [{"role": "user", "content": "hi"}]


def chat(messages: list[Any], **extra: Any) -> bytes:
    """A chat request body for gpt-4o."""
    return orjson.dumps({"model": "gpt-4o", "messages": messages, **extra})


class Lines(logging.Handler):
    """Every log record, from every logger, at every level."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def rendered(self) -> list[str]:
        """Each record as a JSON line, as a text line, and its raw message and fields."""
        out = []
        for record in self.records:
            out += [JsonFormatter().format(record), TextFormatter().format(record)]
            out += [record.getMessage(), repr(getattr(record, "event", None))]
        return out


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler = Lines()
    root = logging.getLogger()
    root.addHandler(handler)  # everything that propagates: the proxy's, uvicorn's, its libraries'
    names = ("toolcall_guard", "uvicorn")
    saved = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)


@pytest.fixture(scope="module")
def emulator() -> Iterator[str]:
    """The strict OpenAI emulator on loopback for the module; its base URL."""
    with running(create_emulator_app("openai")) as url:
        yield url + "/v1"


def raw_exchange(guard: Guard, request: bytes) -> bytes:
    """Send raw bytes to the proxy (no client library to tidy them up); its whole answer."""
    host, port = guard.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or not _complete(data):
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
    return data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    match = re.search(rb"content-length: (\d+)", head.lower())
    return match is not None and len(body) >= int(match[1])


# --- PostgreSQL behind a relay that can be killed -----------------------------------------


class TcpRelay:
    """127.0.0.1:``port`` relayed to 127.0.0.1:``target``; :meth:`stop` kills, :meth:`start`
    revives (on the same port)."""

    def __init__(self, target: int = 5432) -> None:
        self.target = target
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self._runner = LoopThread("pg-relay")
        self._server: asyncio.Server | None = None
        self._transports: set[asyncio.WriteTransport] = set()

    def start(self) -> None:
        self._runner.call(self._start())

    def stop(self) -> None:
        self._runner.call(self._stop())

    def close(self) -> None:
        self.stop()
        self._runner.close()

    async def _start(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def _stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for transport in list(self._transports):
            transport.abort()
        self._transports.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        self._transports.update((writer.transport, up_writer.transport))
        await asyncio.gather(
            _pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True
        )
        self._transports.difference_update((writer.transport, up_writer.transport))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(RuntimeError):  # the loop may be closing with the relay
            writer.close()


@pytest.fixture
def pg_relay() -> Iterator[TcpRelay]:
    """A relay to PostgreSQL, not yet listening (the server is "down" until ``start()``)."""
    relay = TcpRelay()
    yield relay
    relay.close()


def via(relay: TcpRelay, url: str) -> str:
    """``url`` (a PostgreSQL URL on 127.0.0.1:5432) through ``relay``."""
    return url.replace("127.0.0.1:5432", f"127.0.0.1:{relay.port}")
