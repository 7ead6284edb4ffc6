"""One proxied request as the relay sees it: headers sorted on the way in and on the way out."""

from __future__ import annotations

import contextlib
import re
import zlib
from time import perf_counter
from typing import Any
from urllib.parse import quote

from starlette.types import Receive, Scope, Send

from proxy.errors import BadRequestBody
from proxy.logs import RequestLog, request_id
from proxy.relay.base import REQUEST_DROP, RawHeaders, connection_tokens, response_headers
from proxy.repairlog.record import Record

#: Request headers that carry a key for the upstream (Azure's, Anthropic's, Google's).
_KEY_HEADERS = frozenset({b"api-key", b"x-api-key", b"x-goog-api-key"})
#: Shorter values are not taken for keys when scrubbing a text (they would match words).
_MIN_SECRET = 6


class Exchange:
    """A request: the ASGI triple, what the client sent that matters, its log line and record.

    The client's headers are read once: control headers (``x-toolcall-guard-*``) and
    ``authorization`` are set aside, hop-by-hop ones dropped, the rest kept in order to be
    forwarded as they are.
    """

    __slots__ = (
        "auth",
        "body_size",
        "data",
        "forward",
        "log",
        "mode",
        "receive",
        "record",
        "scope",
        "send",
        "upstream_header",
    )

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.auth: bytes | None = None
        self.mode: bytes | None = None
        self.upstream_header: bytes | None = None
        self.data: Any = None  # the parsed chat body
        self.body_size = 0
        self.record: Record | None = None
        sent_id = connection = None
        forward: RawHeaders = []
        for name, value in scope["headers"]:
            if name in REQUEST_DROP:
                if name == b"x-toolcall-guard-upstream":
                    self.upstream_header = value
                elif name == b"x-toolcall-guard-mode":
                    self.mode = value
                elif name == b"connection":
                    connection = value
                continue
            if name == b"authorization":
                self.auth = value
                continue
            if name == b"x-request-id":
                sent_id = value
            forward.append((name, value))
        if connection is not None:  # it names more hop-by-hop headers (RFC 9110 §7.6.1)
            extra = connection_tokens(connection)
            forward = [(k, v) for k, v in forward if k not in extra]
        self.forward = forward
        self.log = RequestLog(scope["method"], scope["path"], request_id(sent_id), perf_counter())

    def scrub(self, text: str, injected: bytes | None) -> str:
        """``text`` (an upstream's error) without the keys this request carried upstream."""
        values = [v for k, v in self.forward if k in _KEY_HEADERS]
        for auth in (self.auth, injected):
            if auth is not None:
                values.append(auth.partition(b" ")[2].strip() or auth)
        for value in values:
            if len(value) >= _MIN_SECRET:
                text = text.replace(value.decode("latin-1"), "[redacted]")
        return text


def own_headers(log: RequestLog) -> RawHeaders:
    """The proxy's response headers: request id, and the sanitizer's outcome, rules, record."""
    headers = [(b"x-request-id", log.request_id.encode())]
    if log.outcome is not None:
        headers.append((b"x-toolcall-guard-outcome", log.outcome.encode()))
    if log.rules:
        headers.append((b"x-toolcall-guard-rules", log.rules.encode()))
    if log.record is not None:
        headers.append((b"x-toolcall-guard-record", log.record.encode()))
    return headers


class ClientHeaders:
    """The upstream's response headers made ready for the client, and what they say."""

    __slots__ = ("encoding", "headers", "sized", "sse")

    def __init__(self, raw: RawHeaders, log: RequestLog) -> None:
        headers = own_headers(log)
        self.sized = self.sse = False
        self.encoding: bytes | None = None
        for name, value in response_headers(raw):
            if name == b"content-length":
                self.sized = True
            elif name == b"content-type":
                self.sse = value.startswith(b"text/event-stream")
            elif name == b"content-encoding":
                self.encoding = value.lower()
            elif name == b"x-request-id":
                # The client's x-request-id names the request at the proxy; the upstream's own
                # id (the one its support asks for) travels on under another name.
                log.upstream_request_id = value.decode("latin-1")
                headers.append((b"x-upstream-request-id", value))
                continue
            headers.append((name, value))
        self.headers = headers


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


def upstream_target(scope: Scope, prefix: str | None, rest: str) -> str:
    """What follows the upstream's ``base_url``: the path after ``/v1`` and the query, as the
    client encoded them (``%2F``, ``%0A`` stay escaped: the decoded path would change the
    request, or put a line break in it).

    400 for ``.``/``..`` segments, which would climb out of the ``base_url`` path.
    """
    if "/." in rest and any(part in (".", "..") for part in rest.split("/")):
        raise BadRequestBody("A path with '.' or '..' segments is not relayed.", status=400)
    lead = b"/v1/" if prefix is None else f"/{prefix}/v1/".encode()
    raw = scope.get("raw_path")
    if raw and raw.startswith(lead):
        path = raw[len(lead) - 1 :]
    else:  # no raw path from the server, or a prefix sent escaped: re-encode the decoded one
        path = quote(rest, safe="/:@!$&'()*+,;=-._~").encode()
    query = scope["query_string"]
    target = path + b"?" + query if query else path
    return _UNSAFE.sub(_escape, target).decode("ascii")
