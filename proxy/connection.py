"""Each connection bounded before any request is parsed: header bytes, header count, header time.

uvicorn's httptools protocol keeps whatever a request's head holds (a 256 MiB header value took
the process from 83 to 552 MiB) and gives a client as long as it likes to send it (an idle
connection, or one byte every 5 s, stayed open indefinitely). :class:`GuardedHttpToolsProtocol`
adds, before the app sees anything (so before auth and before any body is read):

- the head of a request (request line and headers) past ``max_header_bytes``, or with more than
  ``max_headers`` headers, gets ``431`` in the OpenAI error shape and the connection is closed;
- a connection that has not sent a whole head ``header_timeout`` seconds after it opened, or
  after the first byte of its next request, is closed (nothing to answer: the request never
  arrived).

The idle time between requests (``timeout_keep_alive``) and the number of connections served at
once (``limit_concurrency``) are uvicorn's own settings (:mod:`proxy.server`); the 503 beyond
that limit is this proxy's, in the API's own error shape (uvicorn's is plain text, which an SDK
cannot read).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn

from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from proxy.core.wire import wire_for_path
from proxy.errors import HeadersTooLarge, Overloaded, render
from proxy.settings import ServerSettings


@dataclass(frozen=True, slots=True)
class HeadLimits:
    """How much and how long a request's head may take (``server.*`` settings)."""

    max_bytes: int
    max_headers: int
    timeout: float


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of the module docstring."""

    def __init__(self, *args: Any, limits: HeadLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.head_bytes = 0  # bytes received since the head began (the parser buffers them)
        self.head_size = 0  # the head's size as parsed so far (url and headers)
        self.head_headers = 0
        self.reading_head = True  # a fresh connection owes its first request's head
        #: When the head being read began (the connection's start for its first request).
        self.head_began = 0.0
        #: Fires ``timeout`` after ``head_began`` at the latest; it is not cancelled when a head
        #: completes (a timer per request costs more than the request's own check), so when it
        #: fires it looks at the head being read now, if any, and waits for that one's time.
        self.head_timer: asyncio.TimerHandle | None = None
        self.too_large: str | None = None  # which limit the head went past

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_began = self.loop.time()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.reading_head:
            self.head_bytes += len(data)
        super().data_received(data)
        if self.reading_head and self.head_bytes > self.limits.max_bytes:
            self.too_large = f"{self.limits.max_bytes} bytes (server.max_header_bytes)"
            self._refuse()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self.reading_head:  # a fresh connection's clock runs from the connection
            self.head_began = self.loop.time()
            self.reading_head = True
        self.head_size = self.head_headers = 0
        if self.head_timer is None:
            self._arm()

    # A head that arrived in one read is not caught by counting reads: what is parsed is counted
    # (here, not in a helper: these run for every header of every request).
    def on_url(self, url: bytes) -> None:
        self.head_size += len(url)
        if self.head_size > self.limits.max_bytes:
            self._too_many_bytes()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.head_headers += 1
        if self.head_headers > self.limits.max_headers:
            self.too_large = f"{self.limits.max_headers} headers (server.max_headers)"
            # Stops the parser; uvicorn then calls send_400_response, which answers it.
            raise HeadersTooLarge(self.too_large)
        self.head_size += len(name) + len(value) + 4
        if self.head_size > self.limits.max_bytes:
            self._too_many_bytes()
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self.reading_head = False
        self.head_bytes = 0
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if self.too_large is not None:
            self._refuse()
        else:
            super().send_400_response(msg)

    def _too_many_bytes(self) -> NoReturn:
        self.too_large = f"{self.limits.max_bytes} bytes (server.max_header_bytes)"
        raise HeadersTooLarge(self.too_large)

    def _arm(self) -> None:
        self._disarm()
        deadline = self.head_began + self.limits.timeout
        self.head_timer = self.loop.call_at(deadline, self._head_timed_out)

    def _disarm(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if not self.reading_head or self.transport.is_closing():
            return  # the next head arms it again
        if self.loop.time() < self.head_began + self.limits.timeout:
            self._arm()  # a later head than the one it was armed for: its own time
        else:
            self.transport.close()

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        # uvicorn hands a request past ``limit_concurrency`` to its plain-text 503 app.
        super()._start_asgi_task(cycle, overloaded if app is service_unavailable else app)

    def _refuse(self) -> None:
        """431 and close: the head went past ``self.too_large``."""
        self.reading_head = False
        self._disarm()
        if self.transport.is_closing():
            return
        message = f"The request's head is larger than this proxy accepts: {self.too_large}."
        status, headers, body = render(HeadersTooLarge(message))
        head = [b"HTTP/1.1 %d Request Header Fields Too Large" % status]
        head += [name + b": " + value for name, value in headers]
        head.append(b"connection: close")
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        self.transport.close()


def guarded_protocol(server: ServerSettings) -> partial[GuardedHttpToolsProtocol]:
    """The protocol factory uvicorn takes as ``http=`` (a partial pickles: ``--workers``)."""
    limits = HeadLimits(server.max_header_bytes, server.max_headers, server.header_timeout)
    return partial(GuardedHttpToolsProtocol, limits=limits)


async def overloaded(scope: Any, receive: Any, send: Any) -> None:
    """The 503 past ``server.max_connections``, in the error shape of the path's API."""
    wire = wire_for_path(scope.get("path", ""))
    message = "This proxy serves as many connections as it is configured for; try again shortly."
    status, headers, body = render(
        Overloaded(message), "openai" if wire is None else wire.error_shape
    )
    headers = [*headers, (b"connection", b"close"), (b"retry-after", b"1")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
