"""The proxy's own response headers, and the upstream's made ready for the client."""

from __future__ import annotations

from proxy.logs import RequestLog
from proxy.relay.base import RawHeaders, response_headers


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
