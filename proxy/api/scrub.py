"""Keys never come back: scrubbed from upstream error texts, in records and on the wire.

Upstreams quote request headers in some errors (an echo of ``Authorization``, a key in an
``Invalid API key: sk-…`` sentence), in any letter case. :func:`redacted` replaces every key a
request carried upstream, case-insensitively, in a text the proxy keeps (the record, the log).
:func:`scrubbed` does it on the wire: an error answer (4xx, 5xx) from an upstream the proxy
gave its own key is read whole (at most :data:`SCRUB_BYTES`), decoded when gzip/deflate, and
relayed with the key replaced and a new ``content-length``; a body in an encoding the proxy
cannot read is withheld (a short JSON error says so), since it could hold the key unseen.
:func:`masked` does it on any other answer as it streams (:class:`~proxy.relay.mask.KeyMask`,
never buffered): an identity body keeps its length, a gzip or deflate one is relayed decoded.
The proxy asks such an upstream only for encodings it reads (:func:`readable_codings`).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import AsyncIterator, Callable, Iterable

from proxy.api.replay import Replayed, read_head
from proxy.errors import UpstreamUnavailable
from proxy.relay.base import UpstreamResponse
from proxy.relay.http import encoding_of
from proxy.relay.mask import Inflater, KeyMask

#: The most of a refused answer read to scrub it; past it, the rest is cut (error bodies are
#: small: a larger one is no error a client needs whole).
SCRUB_BYTES = 1024 * 1024
#: Shorter values are no key: replacing them would garble unrelated text.
MIN_SECRET = 6
REDACTED = "[redacted]"
_DROPPED = frozenset({b"content-length", b"content-encoding", b"transfer-encoding"})
_WITHHELD = (
    b'{"error":{"message":"The upstream\'s error body was withheld: it came in an encoding the'
    b' proxy cannot check for its key.","type":"upstream_error","param":null,'
    b'"code":"upstream_error_withheld"}}'
)


def secret_of(authorization: bytes) -> bytes:
    """The key in an ``Authorization`` value (``Bearer sk-…`` → ``sk-…``)."""
    return authorization.partition(b" ")[2].strip() or authorization


def redacted(text: str, secrets: Iterable[bytes]) -> str:
    """``text`` with every secret of :data:`MIN_SECRET` bytes or more replaced, in any case."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET:
            pattern = re.escape(secret.decode("latin-1"))
            text = re.sub(pattern, REDACTED, text, flags=re.IGNORECASE)
    return text


async def scrubbed(response: UpstreamResponse, injected: bytes) -> Replayed:
    """``response`` (an error) read whole, decoded, with the ``injected`` key replaced."""
    replayed, _ = await read_head(response, SCRUB_BYTES)
    data = _plain(replayed.head[: SCRUB_BYTES + 1], encoding_of(response.headers))
    text = redacted(data.decode("latin-1"), [secret_of(injected)]).encode("latin-1")
    headers = [(k, v) for k, v in response.headers if k.lower() not in _DROPPED]
    headers.append((b"content-length", b"%d" % len(text)))
    return Replayed(response, text, headers=headers)


def _plain(data: bytes, encoding: bytes | None) -> bytes:
    """The body without its content encoding, as far as it goes; :data:`_WITHHELD` when the
    encoding is one the proxy does not read."""
    if encoding is None or encoding == b"identity":
        return data
    if encoding not in (b"gzip", b"x-gzip", b"deflate"):
        return _WITHHELD
    try:
        return zlib.decompressobj(wbits=47).decompress(data, SCRUB_BYTES)
    except zlib.error:
        return _WITHHELD


#: Content codings the proxy reads (what it asks an upstream it gives its key for).
READABLE = frozenset({b"gzip", b"x-gzip", b"deflate", b"identity"})


def readable_codings(accept: bytes) -> bytes:
    """An ``Accept-Encoding`` value cut to the codings the proxy reads (``identity`` if none)."""
    kept = [c for c in accept.split(b",") if c.partition(b";")[0].strip().lower() in READABLE]
    return b",".join(kept).strip() or b"identity"


class Masked:
    """An answer whose body is relayed with the key masked as it streams (an
    ``UpstreamResponse``); a gzip/deflate body decoded, one the proxy cannot read withheld."""

    __slots__ = ("_decode", "_mask", "_response", "headers", "status")

    def __init__(self, response: UpstreamResponse, injected: bytes) -> None:
        self._response = response
        self._mask = KeyMask([secret_of(injected)])
        self.status = response.status
        self.headers = response.headers
        encoding = encoding_of(response.headers)
        self._decode: Callable[[bytes], bytes] | None = None
        if encoding not in (None, b"identity"):
            self.headers = [(k, v) for k, v in response.headers if k.lower() not in _DROPPED]
            if encoding in (b"gzip", b"x-gzip", b"deflate"):
                self._decode = Inflater().feed
            else:
                self.status = 502
                self.headers.append((b"content-length", b"%d" % len(_WITHHELD)))

    @property
    def body(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[bytes]:
        if self.status != self._response.status:  # withheld: in an encoding not read
            yield _WITHHELD
            return
        async for raw in self._response.body:
            try:
                chunk = raw if self._decode is None else self._decode(raw)
            except zlib.error as exc:  # cut here: nothing unread goes out
                raise UpstreamUnavailable(
                    f"the upstream's body is not what it says: {exc}"
                ) from exc
            out = self._mask.feed(chunk)
            if out:
                yield out
        held = self._mask.flush()
        if held:
            yield held

    async def aclose(self) -> None:
        await self._response.aclose()


def masked(response: UpstreamResponse, injected: bytes) -> Masked:
    """``response`` (not an error: :func:`scrubbed` reads those whole) with the ``injected``
    key masked in its body as it streams."""
    return Masked(response, injected)
