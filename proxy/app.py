"""The application factory: ``create_app(settings)`` builds the app, its lifespan wires the I/O.

Nothing happens at import time. Requests under ``/v1/…`` and ``/{upstream}/v1/…`` go straight
to the raw ASGI :class:`~proxy.api.endpoint.ProxyEndpoint`; everything else (``/repairs``,
``/healthz``, ``/readyz``, ``/metrics``) is FastAPI. In front of both sits the one handler for
the unexpected: it logs the traceback and answers in the OpenAI error shape, never with a bare
500 page.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from fastapi import FastAPI, Request, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from proxy.api import fallback, learned, ops, repairs, ui
from proxy.api.browser import BrowserGuard, answer_options, with_cors
from proxy.api.endpoint import ProxyEndpoint
from proxy.core.wire import wire_for_path
from proxy.errors import InternalError, render
from proxy.errorshape import Shape
from proxy.logs import quiet_incomplete_on_purpose
from proxy.relay.aiohttp_engine import AiohttpRelay
from proxy.relay.asgi import RESPONSE_STARTED, send_error
from proxy.relay.base import NOSNIFF, Relay
from proxy.relay.httpx_engine import HttpxRelay
from proxy.repairlog import RecordWriter, RepairLog, RepairLogUnavailable, open_repair_log
from proxy.routing import split_target
from proxy.settings import ServerSettings, Settings
from proxy.telemetry import tracing_from_env

if TYPE_CHECKING:
    from proxy.telemetry.otel import Tracing

LOGGER = logging.getLogger("toolcall_guard")


class Front:
    """Raw ASGI in front of FastAPI: dispatches proxied paths, catches the unexpected.

    Proxied paths never enter Starlette's middleware stack: its per-request wrappers would cost
    the hot path more than the dispatch itself.
    """

    def __init__(
        self, app: ASGIApp, proxy: ProxyEndpoint, browser: BrowserGuard | None = None
    ) -> None:
        self.app = app
        self.proxy = proxy
        self.browser = browser or BrowserGuard(ServerSettings())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.browser.refusal(scope)  # before the body, before any key
        if refused is not None:
            # Bounded and quoted: the path is the page's to write.
            path = repr(scope["path"][:200])
            LOGGER.warning("refused %s %s: %s", scope["method"], path, refused.code)
            await send_error(send, refused, [], _shape(scope["path"]))
            return
        cors = self.browser.allowed_origin(scope) if self.browser.origins else None
        if scope["method"] == "OPTIONS":  # answered here: a preflight never goes upstream
            await answer_options(send, scope, cors)
            return
        if cors is not None:
            send = with_cors(send, cors)
        target = split_target(scope["path"])
        try:
            if target is not None:  # the hot path marks the scope itself: no wrapper per send
                await self.proxy(scope, receive, send, target)
            else:
                await self.app(scope, receive, _marking(scope, send))
        except Exception:  # the single handler for the unexpected
            LOGGER.exception("unexpected error on %s %s", scope["method"], scope["path"])
            if not scope.get(RESPONSE_STARTED):
                error = InternalError("The proxy failed unexpectedly; see its log.")
                await send_error(send, error, [], _shape(scope["path"]))


def _shape(path: str) -> Shape:
    """The error shape the clients of the wire API at ``path`` parse (OpenAI's elsewhere)."""
    wire = wire_for_path(path)
    return "openai" if wire is None else wire.error_shape


class ToolcallGuard(FastAPI):
    """The FastAPI app (ops and ``/repairs``) behind :class:`Front`, the raw proxy dispatch."""

    front: Front

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.front(scope, receive, send)


async def _internal_error(request: Request, exc: Exception) -> Response:
    """What Starlette's error middleware answers before :class:`Front` logs the exception."""
    status, headers, body = render(InternalError("The proxy failed unexpectedly; see its log."))
    response = Response(body, status_code=status)
    response.raw_headers = headers
    return response


def _marking(scope: Scope, send: Send) -> Send:
    """``send`` marking the scope as the answer starts, and saying ``nosniff`` on every answer
    of the FastAPI side (``/repairs``, ``/ui``, probes, metrics, its 404): a browser never
    sniffs a record's text into HTML or script."""

    async def marked(message: Message) -> None:
        if message["type"] == "http.response.start":
            scope[RESPONSE_STARTED] = True
            headers = message.get("headers", [])
            if not any(name.lower() == NOSNIFF[0] for name, _ in headers):
                message = {**message, "headers": [*headers, NOSNIFF]}
        await send(message)

    return marked


def create_app(
    settings: Settings,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    repair_log: RepairLog | None = None,
    tracing: Tracing | None = None,
) -> FastAPI:
    """Build the proxy app. ``transport`` sends upstream traffic through httpx with it (tests);
    ``repair_log`` replaces the log ``settings.repair_log.url`` names; ``tracing`` replaces the
    OpenTelemetry set-up the ``OTEL_*`` variables ask for (None when they ask for none)."""
    tracing = tracing or tracing_from_env(settings)
    proxy = ProxyEndpoint(settings, tracing=tracing)
    quiet_incomplete_on_purpose()  # a cut JSON answer is logged once, by the proxy

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:  # closes whatever was opened, in reverse
            if tracing is not None:  # flushed last: the spans of the last requests go out
                stack.push_async_callback(asyncio.to_thread, tracing.shutdown)
            if repair_log is None:
                _make_sqlite_dir(settings.repair_log.url)
            log = repair_log or open_repair_log(settings.repair_log.url)
            stack.push_async_callback(log.close)
            await _open_log(log)
            relay: Relay = (
                HttpxRelay(settings.upstreams, transport)
                if transport is not None
                else AiohttpRelay(settings.upstreams)
            )
            stack.push_async_callback(relay.aclose)
            writer = RecordWriter(log, settings.repair_log)
            writer.start()
            stack.push_async_callback(writer.stop)  # drains the queue before the log closes
            app.state.relay, app.state.repair_log, app.state.writer = relay, log, writer
            proxy.bind(relay, writer)
            stack.callback(proxy.bind, None, None)
            url = settings.repair_log.url
            if repair_log is None and url.partition(":")[0].lower() in ("postgresql", "postgres"):
                from proxy.api.learned_shared import SharedLearned  # needs the postgres extra

                shared = app.state.learned_shared = SharedLearned(url, proxy.learned)
                shared.start()
                stack.push_async_callback(shared.stop)
            yield

    app = ToolcallGuard(
        title="toolcall-guard", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )  # the document is served by proxy/api/ops.py, under the admin rule
    browser = BrowserGuard(settings.server)
    app.front = Front(super(ToolcallGuard, app).__call__, proxy, browser)
    app.state.settings = settings
    app.state.proxy = proxy
    app.state.learned = proxy.learned
    app.add_exception_handler(Exception, _internal_error)
    fallback.install(app)  # routing errors outside /v1 in the OpenAI shape
    # learned before repairs: /repairs/{record_id} would take /repairs/learned
    for router in (ops.router, learned.router, repairs.router, ui.router):
        app.include_router(router)
    return app


async def _open_log(log: RepairLog) -> None:
    """Open the repair log; a backend that is down at start does not stop the proxy.

    The writer connects (and migrates) on its next batch, records wait in its queue meanwhile,
    and ``/readyz`` answers 503 until the log answers. Any other error (a schema newer than this
    version) still stops the start.
    """
    try:
        await log.open()
    except RepairLogUnavailable as exc:
        LOGGER.warning("repair log unavailable at start, serving without it for now: %s", exc)


def _make_sqlite_dir(url: str) -> None:
    """Create the directory of a ``sqlite:///relative/file`` log (``data/`` by default)."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///").split("?", 1)[0]
        with contextlib.suppress(OSError):  # then the log is unavailable: see _open_log
            Path(path).parent.mkdir(parents=True, exist_ok=True)
