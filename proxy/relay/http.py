"""HTTP details of relaying: the upstream request target, and decoding a captured error body."""

from __future__ import annotations

import contextlib
import re
import zlib
from urllib.parse import quote

from starlette.types import Scope

from proxy.errors import BadRequestBody, UnsupportedEncoding
from proxy.relay.base import RawHeaders


def encoding_of(headers: RawHeaders) -> bytes | None:
    """The ``content-encoding`` of a response, lower-cased (names in any case)."""
    for name, value in headers:
        if name.lower() == b"content-encoding":
            return value.lower()
    return None


#: gzip members read from one request body (clients send one; each costs a decompressor).
MAX_MEMBERS = 64


def inflated(body: bytes, encoding: bytes, limit: int) -> bytes:
    """A request body sent with ``Content-Encoding: gzip`` or ``deflate``, decompressed.

    Every gzip member is read (what the proxy checks is what the upstream decodes). 413 past
    ``limit`` bytes decompressed (a small bomb must not take the memory), 400 when the bytes
    are not what the header says (a truncated stream, bytes after a deflate stream, more than
    :data:`MAX_MEMBERS` members), 415 for any other encoding.
    """
    name = encoding.strip().lower()
    if name not in (b"gzip", b"x-gzip", b"deflate"):
        raise UnsupportedEncoding(
            f"Content-Encoding {name.decode('latin-1')!r} is not supported on requests the proxy "
            "checks; send the body uncompressed, or gzip/deflate."
        )
    parts: list[bytes] = []
    size, rest = 0, body
    while True:  # gzip may hold several members, read one after the other (RFC 1952 §2.2)
        if len(parts) == MAX_MEMBERS:
            raise BadRequestBody(f"The request body has more than {MAX_MEMBERS} gzip members.")
        data, rest = _member(rest, name, limit + 1 - size)
        size += len(data)
        if size > limit:
            raise BadRequestBody(
                f"The decompressed request body is larger than this proxy accepts ({limit} "
                "bytes, server.max_body_bytes).",
                status=413,
            )
        parts.append(data)
        if not rest:
            return b"".join(parts)
        if name == b"deflate":
            raise BadRequestBody("The request body has bytes after its deflate data.")


def _member(body: bytes, name: bytes, room: int) -> tuple[bytes, bytes]:
    """One gzip member (or the zlib stream) of ``body``, at most ``room`` bytes of it
    decompressed, and the bytes after it.

    An upstream decodes every member, so the proxy checks all of them: bytes after the first
    member are never forwarded unread."""
    inflater = zlib.decompressobj(wbits=47)  # 47: gzip or zlib, detected from the header
    try:
        data = inflater.decompress(body, room)
    except zlib.error as exc:
        raise BadRequestBody(f"The request body is not valid {name.decode()} data: {exc}.") from exc
    if len(data) >= room:  # stopped at ``room``: the caller sees it is over its limit
        return data, b""
    if not inflater.eof:
        raise BadRequestBody(f"The request body's {name.decode()} data ends before its end.")
    return data, inflater.unused_data


def decoded(data: bytes, encoding: bytes | None, limit: int) -> str:
    """A captured (maybe truncated) error body as text, gzip/deflate undone as far as it goes."""
    if encoding in (b"gzip", b"deflate"):
        with contextlib.suppress(zlib.error):
            data = zlib.decompressobj(wbits=47).decompress(data, limit)
    return data.decode("utf-8", "replace")


#: Bytes that may not appear as they are in a request target (controls, space, non-ASCII).
_UNSAFE = re.compile(rb"[^\x21-\x7e]")


def _escape(match: re.Match[bytes]) -> bytes:
    return b"%%%02X" % match[0][0]


def upstream_target(scope: Scope, prefix: str | None, rest: str, *, versioned: bool = False) -> str:
    """What follows the upstream's base URL: the path after ``/v1`` (``versioned``: after the
    prefix, the version included: Gemini's native paths) and the query, as the client encoded
    them (``%2F``, ``%0A`` stay escaped: the decoded path would change the request, or put a
    line break in it).

    400 for ``.``/``..`` segments, which would climb out of the base URL's path.
    """
    if "/." in rest and any(part in (".", "..") for part in rest.split("/")):
        raise BadRequestBody("A path with '.' or '..' segments is not relayed.", status=400)
    head = b"/" if prefix is None else f"/{prefix}/".encode()
    lead = head if versioned else head[:-1] + b"/v1/"
    raw = scope.get("raw_path")
    if raw and raw.startswith(lead):
        path = raw[len(lead) - 1 :]
    else:  # no raw path from the server, or a prefix sent escaped: re-encode the decoded one
        path = quote(rest, safe="/:@!$&'()*+,;=-._~").encode()
    query = scope["query_string"]
    target = path + b"?" + query if query else path
    return _UNSAFE.sub(_escape, target).decode("ascii")
