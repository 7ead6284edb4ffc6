"""A relay over one :class:`httpx.AsyncClient`, for an injected transport.

Tests pass ``httpx.ASGITransport``/``httpx.MockTransport`` through ``create_app(transport=...)``;
anyone who prefers httpx's stack (proxies from the environment, HTTP/2, custom TLS) can too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import httpx

from proxy.relay.base import RawHeaders, broke_off, no_answer, stopped_sending, unreachable
from proxy.settings import UpstreamSettings

#: Headers httpx derives from the URL and the body, which the proxy must not take from the client.
_OWN_HEADERS = frozenset({b"host", b"content-length"})


class HttpxResponse:
    """An httpx streaming response seen through :class:`~proxy.relay.base.UpstreamResponse`."""

    __slots__ = ("_response", "_upstream", "headers", "status")

    def __init__(self, response: httpx.Response, upstream: str) -> None:
        self._response = response
        self._upstream = upstream
        self.status = response.status_code
        self.headers: RawHeaders = list(response.headers.raw)

    @property
    def body(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        if self._response.is_stream_consumed:  # built from bytes (MockTransport): read already
            yield self._response.content
            return
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except httpx.TimeoutException as exc:
            raise stopped_sending(self._upstream) from exc
        except httpx.TransportError as exc:
            raise broke_off(self._upstream, exc) from exc

    async def aclose(self) -> None:
        await self._response.aclose()


class HttpxRelay:
    """Every upstream through one client and the given transport, with per-upstream timeouts."""

    def __init__(
        self, upstreams: Mapping[str, UpstreamSettings], transport: httpx.AsyncBaseTransport
    ) -> None:
        self._client = httpx.AsyncClient(transport=transport, timeout=None, follow_redirects=False)
        self._timeouts = {
            name: httpx.Timeout(None, connect=s.connect_timeout, read=s.read_timeout)
            for name, s in upstreams.items()
        }
        self._read_timeouts = {name: s.read_timeout for name, s in upstreams.items()}

    async def send(
        self, upstream: str, method: str, url: str, headers: RawHeaders, body: bytes
    ) -> HttpxResponse:
        timeout = self._timeouts[upstream]
        request = self._client.build_request(method, url, content=body, timeout=timeout)
        # build_request adds defaults (accept, accept-encoding, user-agent…) the client never
        # sent: keep only what the upstream connection needs and exactly the client's headers.
        kept = [(k, v) for k, v in request.headers.raw if k.lower() in _OWN_HEADERS]
        request.headers = httpx.Headers([*kept, *headers])
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise no_answer(upstream, self._read_timeouts[upstream]) from exc
        except httpx.TransportError as exc:
            raise unreachable(upstream, exc) from exc
        return HttpxResponse(response, upstream)

    async def aclose(self) -> None:
        await self._client.aclose()
