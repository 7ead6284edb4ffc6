"""The proxy's own response headers, and the upstream's made ready for the client."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from proxy.logs import RequestLog
from proxy.relay.base import REQUEST_DROP, RawHeaders, connection_tokens, response_headers


def own_headers(log: RequestLog, record: str | None, extra: RawHeaders) -> RawHeaders:
    """The proxy's response headers: request id, the sanitizer's outcome and rules, the record."""
    headers = [(b"x-request-id", log.request_id.encode())]
    if log.outcome is not None:
        headers.append((b"x-toolcall-guard-outcome", log.outcome.encode()))
    if log.rules:
        headers.append((b"x-toolcall-guard-rules", log.rules.encode()))
    if record is not None:
        headers.append((b"x-toolcall-guard-record", record.encode()))
    headers.extend(extra)
    return headers


class ClientHeaders:
    """The upstream's response headers made ready for the client, and what they say."""

    __slots__ = ("encoding", "headers", "sized", "sse")

    def __init__(self, raw: RawHeaders, own: RawHeaders, log: RequestLog) -> None:
        headers = own
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


@dataclass(slots=True)
class RequestHeaders:
    """A client's request headers, read once: what is forwarded, the key carriers, the proxy's
    own control headers."""

    forward: RawHeaders = field(default_factory=list)  # in order, hop-by-hop ones dropped
    #: The headers carrying a key (``authorization``, ``x-api-key``…), as sent, in order.
    keys: RawHeaders = field(default_factory=list)
    mode: bytes | None = None  # x-toolcall-guard-mode
    upstream: bytes | None = None  # x-toolcall-guard-upstream
    request_id: bytes | None = None  # the client's x-request-id


def read_request_headers(
    headers: Iterable[tuple[bytes, bytes]], key_headers: Collection[bytes]
) -> RequestHeaders:
    """Split the client's headers: control headers and hop-by-hop ones set aside (those a
    ``Connection`` header names too, RFC 9110 §7.6.1), key carriers apart, the rest in order."""
    sent, connection = RequestHeaders(), None
    for name, value in headers:
        if name in REQUEST_DROP:
            if name == b"x-toolcall-guard-upstream":
                sent.upstream = value
            elif name == b"x-toolcall-guard-mode":
                sent.mode = value
            elif name == b"connection":
                connection = value
            continue
        if name in key_headers:
            sent.keys.append((name, value))
            continue
        if name == b"x-request-id":
            sent.request_id = value
        sent.forward.append((name, value))
    if connection is not None:
        extra = connection_tokens(connection)
        sent.forward = [(k, v) for k, v in sent.forward if k not in extra]
        sent.keys = [(k, v) for k, v in sent.keys if k not in extra]
    return sent
