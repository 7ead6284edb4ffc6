"""The production relay: one pooled :class:`aiohttp.ClientSession` per upstream.

aiohttp rather than httpx on the hot path because it measured as the floor on this machine:
httpx's own pool adds ~7x aiohttp's latency under load (DESIGN §6).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError

from proxy.relay.base import RawHeaders, broke_off, no_answer, stopped_sending, unreachable
from proxy.settings import UpstreamSettings

# aiohttp would otherwise invent these: a made-up Accept-Encoding would get the client a body
# compressed in a way it never asked for, a made-up Content-Type would mislabel the body.
_SKIP_AUTO_HEADERS = ("Accept", "Accept-Encoding", "Content-Type", "User-Agent")


class AiohttpResponse:
    """An aiohttp response seen through :class:`~proxy.relay.base.UpstreamResponse`.

    It watches its connection: when aiohttp's C parser meets a malformed body (a bad chunk
    size), aiohttp closes the connection without waking the body's reader, and without a
    ``sock_read`` timeout either (aiohttp 3.14): the read would wait forever. Losing the
    connection before the body ended makes the read fail instead.
    """

    __slots__ = ("_closed", "_response", "_upstream", "headers", "status")

    def __init__(self, response: aiohttp.ClientResponse, upstream: str) -> None:
        self._response = response
        self._upstream = upstream
        self.status = response.status
        self.headers: RawHeaders = list(response.raw_headers)
        protocol = None if response.connection is None else response.connection.protocol
        self._closed = None if protocol is None else protocol.closed
        if self._closed is not None:
            self._closed.add_done_callback(self._lost)
        elif protocol is not None:  # lost already, before the body ended or not
            self._lost(None)

    def _lost(self, closed: asyncio.Future[None] | None) -> None:
        if closed is not None:
            _retrieved(closed)
        content = self._response.content
        if not content.is_eof() and content.exception() is None:
            content.set_exception(
                aiohttp.ClientPayloadError("connection lost before the body ended")
            )

    @property
    def body(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while True:
                chunk = await content.readany()
                if not chunk:
                    return
                yield chunk
        except TimeoutError as exc:
            raise stopped_sending(self._upstream) from exc
        except (aiohttp.ClientError, HttpProcessingError) as exc:  # the latter: a malformed body
            raise broke_off(self._upstream, exc) from exc

    async def aclose(self) -> None:
        closed = self._closed
        if closed is not None:  # the connection may outlive us, pooled: leave it one retriever
            closed.remove_done_callback(self._lost)
            closed.remove_done_callback(_retrieved)
            closed.add_done_callback(_retrieved)
        if self._response.content.is_eof():
            self._response.release()  # back to the pool
        else:
            self._response.close()  # a half-read connection cannot be reused


def _retrieved(closed: asyncio.Future[None]) -> None:
    """Mark how a connection ended as seen: a reset would otherwise be logged as an error
    ("Future exception was never retrieved") once the future we had aiohttp create is gone."""
    if not closed.cancelled():
        closed.exception()


class AiohttpRelay:
    """One session per upstream, created inside the running event loop (the app's lifespan)."""

    def __init__(self, upstreams: Mapping[str, UpstreamSettings]) -> None:
        self._sessions = {name: _session(settings) for name, settings in upstreams.items()}
        self._read_timeouts = {name: s.read_timeout for name, s in upstreams.items()}

    async def send(
        self, upstream: str, method: str, url: str, headers: RawHeaders, body: bytes
    ) -> AiohttpResponse:
        try:
            response = await self._sessions[upstream].request(
                method,
                url,
                headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers],
                data=body or None,
                allow_redirects=False,
            )
        except TimeoutError as exc:
            raise no_answer(upstream, self._read_timeouts[upstream]) from exc
        except aiohttp.ClientError as exc:
            raise unreachable(upstream, exc) from exc
        return AiohttpResponse(response, upstream)

    async def aclose(self) -> None:
        for session in self._sessions.values():
            await session.close()


def _session(settings: UpstreamSettings) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(
        total=None, connect=settings.connect_timeout, sock_read=settings.read_timeout
    )
    # limit=0: one upstream connection per client request in flight, as many as the clients
    # open (the default cap of 100 would queue the 101st concurrent stream).
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
    return aiohttp.ClientSession(
        timeout=timeout,
        connector=connector,
        auto_decompress=False,
        skip_auto_headers=_SKIP_AUTO_HEADERS,
        cookie_jar=aiohttp.DummyCookieJar(),
        raise_for_status=False,
    )
