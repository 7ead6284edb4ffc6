"""The proxy's own errors and their one mapping to JSON, in the shape the API's clients parse.

OpenAI's ``{"error": {"message", "type", "param", "code"}}`` everywhere, except on the paths of a
wire API whose row says ``error_shape = "anthropic"`` (``/v1/messages``): there
``{"type": "error", "error": {"type", "message"}}`` with Anthropic's error types.

```
ProxyError                  base: .status, .openai_type, .code, .param; rendered by render()
├── HistoryRejected         the policy rejected the history → 400 invalid_tool_history
├── BadRequestBody          not JSON / not an object / history malformed → 400 (413 when too big)
├── InvalidParameter        an admin endpoint's query or path parameter is malformed → 400
├── Unauthorized            client key missing or wrong → 401
│   └── AdminUnauthorized   admin token missing or wrong → 401
├── AdminTokenRequired      admin endpoint beyond loopback with no token configured → 403
├── RecordNotFound          → 404
├── HeadersTooLarge          the request's head past server.max_header_bytes/max_headers → 431
├── RequestTimeout          the request body did not arrive within server.body_timeout → 408
├── UnsupportedEncoding     a request body in a Content-Encoding the proxy cannot read → 415
├── UnknownUpstream         → 400 unknown_upstream (404 for an unknown path prefix)
├── ApiNotServed            the routed upstream has no base URL for the wire API → 400
├── RepairLogDown           the repair log does not answer → 503
├── LearningUnavailable     learned field strips not set up in this process → 503
├── RouteError              a routing error outside /v1 (unknown path 404, method 405)
├── InternalError           anything unexpected (the traceback stays in the log) → 502
└── UpstreamError
    ├── UpstreamTimeout     → 504
    └── UpstreamUnavailable → 502

ConfigError                 start-up only (bad config, unknown rule or action): never a response
```

Upstream error *responses* are never wrapped: they pass through as they are.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson

#: The error body a wire API's clients parse (:attr:`proxy.core.wire.Wire.error_shape`).
Shape = Literal["openai", "anthropic", "google"]

#: Google's canonical status per HTTP status (google.rpc.Code; gemini-native.md §2).
GOOGLE_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

#: Anthropic's error ``type`` per status (platform.claude.com/docs/en/api/errors).
ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class ProxyError(Exception):
    status = 500
    openai_type = "server_error"
    code: str | None = None

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    def extra(self) -> dict[str, Any]:
        """Fields beyond the message the error carries in either shape (findings)."""
        return {}

    def payload(self, shape: Shape = "openai") -> dict[str, Any]:
        if shape == "google":
            return {"error": self._google()}
        if shape == "anthropic":
            kind = ANTHROPIC_TYPES.get(self.status)
            if kind is None:
                kind = "invalid_request_error" if self.status < 500 else "api_error"
            return {
                "type": "error",
                "error": {"type": kind, "message": self.message, **self.extra()},
            }
        fields = {"message": self.message, "type": self.openai_type, "param": self.param}
        return {"error": {**fields, "code": self.code, **self.extra()}}

    def _google(self) -> dict[str, Any]:
        """Google's envelope (gemini-native.md §2): code, message, status, and a ``BadRequest``
        detail naming the field (``contents[3].parts[1]``) when the error has one."""
        error: dict[str, Any] = {
            "code": self.status,
            "message": self.message,
            "status": GOOGLE_STATUSES.get(self.status, "INTERNAL"),
        }
        if self.param is not None:
            violation = {"field": self.param, "description": self.message}
            detail = {"@type": "type.googleapis.com/google.rpc.BadRequest"}
            error["details"] = [{**detail, "fieldViolations": [violation]}]
        return {**error, **self.extra()}

    def body(self, shape: Shape = "openai") -> bytes:
        return orjson.dumps(self.payload(shape))

    def event(self, shape: Shape = "openai") -> bytes:
        """The error as the last event of an SSE stream (Anthropic names it ``error``)."""
        head = b"event: error\n" if shape == "anthropic" else b""
        return head + b"data: " + self.body(shape) + b"\n\n"


def render(
    error: ProxyError, shape: Shape = "openai"
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The one rendering of a proxy error: status, headers and the JSON body in ``shape``."""
    body = error.body(shape)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if isinstance(error, Unauthorized):
        headers.append((b"www-authenticate", b"Bearer"))
    if isinstance(error, RequestTimeout):  # the rest of a slow body is not worth waiting for
        headers.append((b"connection", b"close"))
    return error.status, headers, body


class ConfigError(ValueError):
    """Raised at start-up only; the message names the key and the allowed values."""


class BadRequestBody(ProxyError):
    status = 400
    openai_type = "invalid_request_error"
    code = "invalid_request_body"

    def __init__(self, message: str, *, param: str | None = None, status: int = 400) -> None:
        super().__init__(message, param=param)
        self.status = status
        if status == 413:
            self.code = "request_too_large"


class HistoryRejected(ProxyError):
    status = 400
    openai_type = "invalid_request_error"
    code = "invalid_tool_history"

    def __init__(self, message: str, *, param: str | None, findings: list[dict[str, str]]) -> None:
        super().__init__(message, param=param)
        self.findings = findings

    def extra(self) -> dict[str, Any]:
        return {"findings": self.findings}


class InvalidParameter(ProxyError):
    """400: a query or path parameter of an admin endpoint is malformed or out of range."""

    status = 400
    openai_type = "invalid_request_error"
    code = "invalid_parameter"


class Unauthorized(ProxyError):
    status = 401
    openai_type = "invalid_request_error"
    code = "invalid_api_key"


class AdminUnauthorized(Unauthorized):
    code = "invalid_admin_token"


class AdminTokenRequired(ProxyError):
    """403: an admin endpoint reachable from the network with no admin token configured."""

    status = 403
    openai_type = "permission_error"
    code = "admin_token_required"


class BrowserRefused(ProxyError):
    """403: a foreign ``Host`` or a browser's cross-origin request (:mod:`proxy.api.browser`);
    415 for a browser's ``POST`` that is not JSON."""

    openai_type = "permission_error"

    def __init__(self, message: str, *, code: str, status: int = 403) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        if status == 415:
            self.openai_type = "invalid_request_error"


class RecordNotFound(ProxyError):
    status = 404
    openai_type = "invalid_request_error"
    code = "record_not_found"


class RepairLogDown(ProxyError):
    status = 503
    openai_type = "server_error"
    code = "repair_log_unavailable"


class Overloaded(ProxyError):
    """503: more connections open than ``server.max_connections`` (:mod:`proxy.connection`)."""

    status = 503
    openai_type = "server_error"
    code = "overloaded"


class LearningUnavailable(ProxyError):
    status = 503
    openai_type = "server_error"
    code = "learned_strips_unavailable"


class RouteError(ProxyError):
    """A Starlette HTTP error (404, 405…) outside ``/v1``, in the OpenAI shape."""

    openai_type = "invalid_request_error"

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class InternalError(ProxyError):
    """Anything unexpected, as the client sees it (the traceback stays in the log)."""

    status = 502
    openai_type = "server_error"
    code = "proxy_internal_error"


class HeadersTooLarge(ProxyError):
    """431: a request's head (line and headers) past the limits (:mod:`proxy.connection`)."""

    status = 431
    openai_type = "invalid_request_error"
    code = "request_headers_too_large"


class RequestTimeout(ProxyError):
    """The client took longer than ``server.body_timeout`` to send its body (slowloris)."""

    status = 408
    openai_type = "invalid_request_error"
    code = "request_timeout"


class UnsupportedEncoding(ProxyError):
    """415: the body of a checked request comes in an encoding other than gzip or deflate."""

    status = 415
    openai_type = "invalid_request_error"
    code = "unsupported_content_encoding"


class UnknownUpstream(ProxyError):
    openai_type = "invalid_request_error"
    code = "unknown_upstream"

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ApiNotServed(ProxyError):
    """400: the routed upstream has no base URL for the request's wire API (an upstream without
    ``anthropic_base_url`` asked for ``/v1/messages``)."""

    status = 400
    openai_type = "invalid_request_error"
    code = "api_not_served"


class UpstreamError(ProxyError):
    openai_type = "upstream_error"


class UpstreamTimeout(UpstreamError):
    status = 504
    code = "upstream_timeout"


class UpstreamUnavailable(UpstreamError):
    status = 502
    code = "upstream_unavailable"
