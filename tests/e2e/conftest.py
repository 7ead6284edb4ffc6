"""Real servers on loopback: the strict emulators as upstreams, the proxy in front of them."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from proxy.app import create_app
from proxy.emulator import ReceivedRequest, create_emulator_app
from proxy.settings import Settings, load_settings
from tests.servers import running

#: Where each emulator serves the OpenAI-compatible API (Gemini's real compat path).
PREFIX = {"openai": "/v1", "deepseek": "/v1", "gemini": "/v1beta/openai"}
MODEL = {"openai": "gpt-4o", "deepseek": "deepseek-chat", "gemini": "gemini-2.5-flash"}


@dataclass
class Upstream:
    """A running emulator and what it received."""

    provider: str
    url: str  # its base_url (with the provider's prefix)
    received: list[ReceivedRequest] = field(default_factory=list)

    def chats(self) -> list[ReceivedRequest]:
        return [r for r in self.received if r.path.endswith("/chat/completions")]


@pytest.fixture(scope="session")
def emulators() -> Iterator[dict[str, Upstream]]:
    """One strict emulator per provider for the whole session."""
    with ExitStack() as stack:
        upstreams = {}
        for provider, prefix in PREFIX.items():
            received: list[ReceivedRequest] = []
            url = stack.enter_context(running(create_emulator_app(provider, received=received)))
            upstreams[provider] = Upstream(provider, url + prefix, received)
        yield upstreams


@pytest.fixture(scope="session")
def http() -> Iterator[httpx.Client]:
    """One HTTP client for the session (building one costs ~0.1 s of TLS set-up)."""
    with httpx.Client(timeout=10.0) as client:
        yield client


@pytest.fixture
def upstreams(emulators: dict[str, Upstream]) -> dict[str, Upstream]:
    """The session's emulators with nothing received yet."""
    for upstream in emulators.values():
        upstream.received.clear()
    return emulators


def proxy_settings(base_urls: dict[str, str], **overrides: Any) -> Settings:
    """Settings for a proxy in front of ``base_urls``, with a memory repair log."""
    upstream_overrides = overrides.pop("upstream_overrides", {})
    models = {"openai": ["gpt-*", "o3*"], "deepseek": ["deepseek-*"], "gemini": ["gemini-*"]}
    upstreams = {
        name: {"base_url": url, "models": models.get(name, []), **upstream_overrides}
        for name, url in base_urls.items()
    }
    repair_log = {"url": "memory://", "flush_interval": 0.05}
    repair_log |= overrides.pop("repair_log", {})
    return load_settings(upstreams=upstreams, repair_log=repair_log, **overrides)


@dataclass
class Proxy:
    """A running proxy: its URL, its app (for ``app.state``) and an HTTP client."""

    url: str
    app: FastAPI
    http: httpx.Client

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def chat(self, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        """POST a body (bytes as they are, anything else as JSON) to /v1/chat/completions."""
        content = body if isinstance(body, bytes) else orjson.dumps(body)
        sent = {"content-type": "application/json", **(headers or {})}
        return self.http.post(self.v1 + "/chat/completions", content=content, headers=sent)


@pytest.fixture
def start_proxy(http: httpx.Client) -> Iterator[Callable[..., Proxy]]:
    """``start_proxy(base_urls, **settings)`` serves a proxy for the rest of the test."""
    with ExitStack() as stack:

        def start(base_urls: dict[str, str], *, transport: Any = None, **overrides: Any) -> Proxy:
            app = create_app(proxy_settings(base_urls, **overrides), transport=transport)
            return Proxy(stack.enter_context(running(app)), app, http)

        yield start


@pytest.fixture
def proxy(start_proxy: Callable[..., Proxy], upstreams: dict[str, Upstream]) -> Proxy:
    """The proxy in front of the three emulators, default policies."""
    return start_proxy({name: u.url for name, u in upstreams.items()})


class EndlessStream:
    """An upstream that streams SSE events every 20 ms until its client goes away."""

    def __init__(self) -> None:
        self.streaming = threading.Event()
        self.disconnected = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        gone = asyncio.ensure_future(receive())  # resolves when the connection is lost
        self.streaming.set()
        n = 0
        while not gone.done():
            n += 1
            event = b'data: {"n": %d}\n\n' % n
            await send({"type": "http.response.body", "body": event, "more_body": True})
            await asyncio.wait({gone}, timeout=0.02)
        self.disconnected.set()


class PacedEvents:
    """Answers any request with ``count`` SSE events, ``pace`` seconds apart; records paths."""

    def __init__(self, count: int, pace: float) -> None:
        self.count, self.pace = count, pace
        self.requests: list[tuple[str, str, bytes]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append((scope["method"], scope["path"], body))
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for n in range(self.count):
            if n:
                await asyncio.sleep(self.pace)
            event = b'event: response.delta\ndata: {"n": %d}\n\n' % n
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


class SilentUpstream:
    """Reads the request, never answers, and notes when the connection goes away."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.disconnected = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        self.asked.set()
        while (await receive())["type"] != "http.disconnect":
            pass
        self.disconnected.set()


class StallingUpstream:
    """Sends its headers and the first ``sent`` bytes of ``body``, then nothing, ever."""

    def __init__(self, body: bytes, sent: int, *, sized: bool, content_type: bytes) -> None:
        self.body, self.sent, self.sized, self.content_type = body, sent, sized, content_type

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", self.content_type)]
        if self.sized:
            headers.append((b"content-length", str(len(self.body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send(
            {"type": "http.response.body", "body": self.body[: self.sent], "more_body": True}
        )
        await receive()  # until the proxy gives up and disconnects


@contextmanager
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers; yields its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        listener.close()


def closed_port_url() -> str:
    """A loopback URL where nothing listens (connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
