"""Keys never come back: scrubbed from upstream error texts, in records and on the wire.

Upstreams quote request headers in some errors (an echo of ``Authorization``, a key in an
``Invalid API key: sk-…`` sentence), in any letter case. :func:`redacted` replaces every key a
request carried upstream, case-insensitively, in a text the proxy keeps (the record, the log).
:func:`scrubbed` does it on the wire: an error answer (4xx, 5xx) from an upstream the proxy
gave its own key is read whole (at most :data:`SCRUB_BYTES`), decoded when gzip/deflate, and
relayed with the key replaced and a new ``content-length``; a body in an encoding the proxy
cannot read is withheld (a short JSON error says so), since it could hold the key unseen.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable

from proxy.api.replay import Replayed, read_head
from proxy.relay.base import UpstreamResponse
from proxy.relay.http import encoding_of

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
