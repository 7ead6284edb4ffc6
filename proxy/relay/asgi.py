"""The client side of a proxied exchange, in raw ASGI: read the body, answer, relay a stream."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar

from starlette.types import Message, Receive, Scope, Send

from proxy.endings import Ending
from proxy.errors import (
    BadRequestBody,
    ClientGone,
    ProxyError,
    RequestTimeout,
    UpstreamError,
    UpstreamTimeout,
    render,
)
from proxy.errorshape import Shape, event
from proxy.relay.base import RawHeaders, UpstreamResponse
from proxy.relay.eager import detached, within

#: Scope key set once the response has started (the app's error handler must not answer then).
RESPONSE_STARTED = "toolcall_guard.response_started"


#: True in the task serving a request whose response is left incomplete on purpose: a sized
#: body the upstream cut short. ASGI has no message to abort a response; a callable that
#: returns without completing it is how the server is told to close the connection (so the
#: client cannot take the truncated body for a whole one), and uvicorn then logs "ASGI callable
#: returned without completing response." at ERROR, without the request id. The proxy's own
#: request line says it instead (at warning, :class:`proxy.logs.RequestLog`), and
#: :class:`proxy.logs.IncompleteOnPurpose` drops uvicorn's line for exactly these requests.
LEFT_INCOMPLETE: ContextVar[bool] = ContextVar("toolcall_guard_left_incomplete", default=False)


async def read_body(receive: Receive, limit: int, seconds: float) -> bytes:
    """The whole request body; 413 as soon as it grows past ``limit`` bytes, 408 when it takes
    longer than ``seconds`` in all (uvicorn bounds idle connections, not slow bodies)."""
    try:
        return await within(_read_body(receive, limit), seconds)  # no timer for a body at hand
    except TimeoutError:
        raise RequestTimeout(
            f"The request body did not arrive within {seconds:g} s (server.body_timeout)."
        ) from None


async def _read_body(receive: Receive, limit: int) -> bytes:
    message = await receive()
    if message["type"] != "http.request":
        raise ClientGone
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        if len(body) > limit:
            raise _too_large(limit)
        return body
    parts = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _too_large(limit: int) -> BadRequestBody:
    return BadRequestBody(
        f"The request body is larger than this proxy accepts ({limit} bytes, "
        "server.max_body_bytes).",
        status=413,
    )


async def start_response(scope: Scope, send: Send, status: int, headers: RawHeaders) -> None:
    """Send the status and headers, and mark the scope: from now on no error page can follow."""
    scope[RESPONSE_STARTED] = True
    await send({"type": "http.response.start", "status": status, "headers": headers})


async def send_error(
    send: Send, error: ProxyError, headers: RawHeaders, shape: Shape = "openai"
) -> None:
    """Answer with the proxy's own error, in the error shape of the request's API."""
    status, own, body = render(error, shape)
    await send({"type": "http.response.start", "status": status, "headers": [*own, *headers]})
    await send({"type": "http.response.body", "body": body})


class ClientWatch:
    """Cancels the task relaying a request when its client disconnects.

    uvicorn's ``send`` silently drops what follows a disconnect, so without this the upstream
    would go on generating (and billing) for nobody. Start it before the upstream request,
    :meth:`stop` it when the exchange ends; in ``except CancelledError``, :meth:`absorb` tells
    the cancellation it caused from any other (which must propagate).
    """

    __slots__ = ("gone", "owner", "stop")

    def __init__(self, receive: Receive) -> None:
        self.gone = False
        self.owner = asyncio.current_task()
        #: Ends the watch (:meth:`stop`): the pending ``receive()`` is closed where it waits.
        self.stop = detached(receive(), self._fired)  # no task of its own: proxy.relay.eager

    def _fired(self, message: Message) -> None:
        if message["type"] == "http.disconnect" and self.owner is not None:
            self.gone = True
            self.owner.cancel()

    def absorb(self) -> bool:
        """Inside ``except CancelledError``: True when the disconnect alone caused it."""
        return self.gone and self.owner is not None and self.owner.uncancel() == 0


class ErrorEvent:
    """Finds the first ``event: error`` of a relayed SSE stream and keeps it (at most ``limit``
    bytes from there): an error after a 200 (Anthropic's ``overloaded_error`` mid-stream,
    anthropic-messages.md §6) is what the provider said, like a refusal. The stream itself is
    relayed unchanged; the mark is looked for across chunk boundaries too."""

    __slots__ = ("found", "limit", "mark", "tail")

    def __init__(self, limit: int, mark: bytes = b"event: error") -> None:
        self.limit = limit
        #: How the error event begins (the API's row says: Gemini's is a bare ``data:`` line).
        self.mark = mark
        self.found: bytearray | None = None
        self.tail = b""

    def feed(self, chunk: bytes) -> None:
        if self.found is not None:
            room = self.limit - len(self.found)
            if room > 0:
                self.found += chunk[:room]
            return
        window = self.tail + chunk
        at = window.find(self.mark)
        if at >= 0:
            self.found = bytearray(window[at : at + self.limit])
        else:
            self.tail = window[-(len(self.mark) - 1) :]


def _body(chunk: bytes) -> Message:
    return {"type": "http.response.body", "body": chunk, "more_body": True}


async def relay_body(
    send: Send,
    response: UpstreamResponse,
    *,
    sized: bool,
    sse: bool,
    capture: int = 0,
    shape: Shape = "openai",
    errors: ErrorEvent | None = None,
    observe: Callable[[bytes], None] | None = None,
) -> tuple[Ending, bytes | None]:
    """Relay the upstream body chunk by chunk; return how it ended and the captured prefix.

    ``sized``: the response declared a content-length. When the upstream fails mid-body, an
    unsized (streamed) response ends cleanly (an SSE stream first gets an ``error`` event in
    ``shape`` when the failure falls between events, so SDKs raise instead of taking a
    cut stream for a whole one); a sized one is left incomplete and uvicorn closes the
    connection, so the client cannot mistake the truncated body for a whole one. The upstream
    response is closed however it ends (cancelled included). ``errors`` is fed every chunk, and
    so is ``observe`` (a reader of the answer's own, e.g. telemetry's), before it is sent.
    """
    captured = bytearray() if capture else None
    last = b"\n\n"
    end: Ending
    try:
        async for chunk in response.body:
            if captured is not None and len(captured) < capture:
                captured += chunk[: capture - len(captured)]
            if errors is not None:
                errors.feed(chunk)
            if observe is not None:
                observe(chunk)
            await send(_body(chunk))
            last = chunk
        end = "complete"
        await send({"type": "http.response.body", "body": b""})
    except UpstreamError as exc:
        end = "upstream_timeout" if isinstance(exc, UpstreamTimeout) else "upstream_cut"
        if sized:
            LEFT_INCOMPLETE.set(True)
        else:
            between = _between_events(last)
            await _end_broken_stream(send, exc, sse=sse, between_events=between, shape=shape)
    finally:
        await response.aclose()
    return end, None if captured is None else bytes(captured)


def _between_events(last: bytes) -> bool:
    return last.endswith((b"\n\n", b"\r\n\r\n", b"\r\r"))


async def _end_broken_stream(
    send: Send, error: UpstreamError, *, sse: bool, between_events: bool, shape: Shape
) -> None:
    if sse and between_events:
        await send(_body(event(error, shape)))
    await send({"type": "http.response.body", "body": b""})
