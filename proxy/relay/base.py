"""The upstream side of the proxy as one small interface, and the header rules both sides share.

An engine (:mod:`proxy.relay.aiohttp_engine` in production, :mod:`proxy.relay.httpx_engine` for
an injected httpx transport) implements :class:`Relay`: send one request, get back the status,
the raw headers and an async iterator over the raw body bytes (never decompressed, never
buffered). Engines raise :class:`~proxy.errors.UpstreamTimeout` and
:class:`~proxy.errors.UpstreamUnavailable`, nothing engine-specific, both from ``send`` and while
the body is being read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from proxy.errors import UpstreamTimeout, UpstreamUnavailable

RawHeaders = list[tuple[bytes, bytes]]


# What either engine raises, in one wording (the client and the record read it).
def no_answer(upstream: str, read_timeout: float) -> UpstreamTimeout:
    return UpstreamTimeout(
        f"upstream {upstream!r} did not answer in time (read timeout {read_timeout:g} s)"
    )


def unreachable(upstream: str, exc: Exception) -> UpstreamUnavailable:
    return UpstreamUnavailable(f"upstream {upstream!r} is unreachable: {exc}")


def stopped_sending(upstream: str) -> UpstreamTimeout:
    return UpstreamTimeout(f"upstream {upstream!r} stopped sending")


def broke_off(upstream: str, exc: Exception) -> UpstreamUnavailable:
    return UpstreamUnavailable(f"upstream {upstream!r} broke off: {exc}")


#: RFC 9110 §7.6.1 connection-specific headers (plus the de-facto ``proxy-connection`` and
#: ``keep-alive``): they describe one hop and must not be forwarded in either direction.
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)

#: Request headers the proxy never forwards: the hop-by-hop ones; ``host`` and
#: ``content-length``, which the client library sets for the upstream and for the body actually
#: sent; ``expect``, because the body is already read; and the proxy's own control headers.
REQUEST_DROP = HOP_BY_HOP | {
    b"host",
    b"content-length",
    b"expect",
    b"x-toolcall-guard-upstream",
    b"x-toolcall-guard-mode",
}


class UpstreamResponse(Protocol):
    """An upstream answer whose headers have arrived; the body is read by iterating ``body``."""

    status: int
    headers: RawHeaders  # as received: names in any case, values untouched

    @property
    def body(self) -> AsyncIterator[bytes]:
        """The raw body bytes, chunk by chunk, as they arrive."""

    async def aclose(self) -> None:
        """Give the connection back (body fully read) or close it (body not fully read)."""


class Relay(Protocol):
    """Sends requests to the configured upstreams over pooled connections."""

    async def send(
        self, upstream: str, method: str, url: str, headers: RawHeaders, body: bytes
    ) -> UpstreamResponse:
        """Send one request and return once the response headers arrived."""

    async def aclose(self) -> None:
        """Close every pooled connection."""


def connection_tokens(value: bytes) -> frozenset[bytes]:
    """Header names a ``Connection`` header value declares hop-by-hop (RFC 9110 §7.6.1)."""
    return frozenset(t.strip().lower() for t in value.split(b",") if t.strip())


#: Response headers the proxy's own server sets (uvicorn's ``date`` and ``server``): the
#: upstream's copies are dropped rather than sent twice; so is its ``x-content-type-options``,
#: replaced by :data:`NOSNIFF`. An upstream's cookies (``set-cookie``) are its session with
#: the proxy's key, not the client's: a browser would keep them for the proxy's origin and
#: send them to every other path it serves. (``access-control-*`` are dropped too.)
RESPONSE_DROP = HOP_BY_HOP | {
    b"date",
    b"server",
    b"x-content-type-options",
    b"set-cookie",
    b"set-cookie2",
}
#: Every relayed answer: a browser never sniffs an upstream's error page into HTML or script.
NOSNIFF = (b"x-content-type-options", b"nosniff")


def response_headers(raw: RawHeaders) -> RawHeaders:
    """The upstream's headers to send to the client: hop-by-hop ones removed, names lower-case.

    The upstream's CORS headers (``access-control-*``) never pass: whether a web page may read
    an answer is this proxy's decision (:mod:`proxy.api.browser`), not the provider's.

    ``content-length`` and ``content-encoding`` pass through: the body is relayed byte for byte
    (engines never decompress), so both still describe it exactly.
    """
    out = []
    connection = None
    for name, value in raw:
        lower = name.lower()
        if lower in RESPONSE_DROP or lower.startswith(b"access-control-"):
            if lower == b"connection":
                connection = value
            continue
        out.append((lower, value))
    if connection is not None:
        extra = connection_tokens(connection)
        out = [(k, v) for k, v in out if k not in extra]
    out.append(NOSNIFF)
    return out
