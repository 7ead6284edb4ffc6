"""Every error class of the proxy, in one tree; :func:`render` is the one mapping of an answered
error to a response (its JSON, in the API's own shape, is :mod:`proxy.errorshape`'s).

```
ProxyError                  answered: .status, .openai_type, .code, .param, .headers; render()
├── HistoryRejected         the policy rejected the history → 400 invalid_tool_history
├── BadRequestBody          not JSON / not an object / history malformed → 400 (413 when too big)
├── InvalidParameter        an admin endpoint's query or path parameter is malformed → 400
├── Unauthorized            client key missing or wrong → 401
│   └── AdminUnauthorized   admin token missing or wrong → 401
├── AdminTokenRequired      admin endpoint beyond loopback with no token configured → 403
├── BrowserRefused          a foreign Host, a browser's cross-origin request → 403 (415)
├── RecordNotFound          → 404
├── UpstreamLacksApi        the routed upstream answered the API's path with a bare 404 → 404
├── HeadersTooLarge         the request's head past server.max_header_bytes/max_headers → 431
├── RequestTimeout          the request body did not arrive within server.body_timeout → 408
├── UnsupportedEncoding     a request body in a Content-Encoding the proxy cannot read → 415
├── UnknownUpstream         → 400 unknown_upstream (404 for an unknown path prefix)
├── ApiNotServed            the routed upstream has no base URL for the wire API → 400
├── RepairLogDown           the repair log does not answer → 503
├── Overloaded              more connections than server.max_connections → 503
├── LearningUnavailable     learned field strips not set up in this process → 503
├── RouteError              a routing error outside /v1 (unknown path 404, method 405)
├── InternalError           anything unexpected (the traceback stays in the log) → 502
└── UpstreamError
    ├── UpstreamTimeout     → 504
    └── UpstreamUnavailable → 502

Never answered as they are (each is caught where it means something):
ConfigError                 start-up only (bad config, unknown rule or action)
BadParam                    a rule parameter the rule cannot work with → ConfigError at start
MalformedHistory            a body no policy can work on → BadRequestBody (400)
AmbiguousBody               a saved body more than one API could have sent: check asks --api
Unreadable                  check's input or config it cannot work on → exit 3
ClientGone                  the client went away before its request was answered
InvalidQuery                a repair-log query out of range → InvalidParameter (400)
RepairLogError              a repair-log operation failed (the data: retrying cannot help)
└── RepairLogUnavailable    the backend cannot be reached or written now → RepairLogDown (503)
```

Upstream error *responses* are never wrapped: they pass through as they are. A pure leaf (the
core raises its errors from here): it imports nothing of the package but :mod:`proxy.errorshape`.
"""

from __future__ import annotations

from typing import Any

from proxy.errorshape import Shape, body


class ProxyError(Exception):
    status = 500
    openai_type = "server_error"
    code: str | None = None
    headers: tuple[tuple[bytes, bytes], ...] = ()  # sent with the JSON body

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    def extra(self) -> dict[str, Any]:
        """Fields beyond the message the error carries in either shape (findings)."""
        return {}


def render(
    error: ProxyError, shape: Shape = "openai"
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The one rendering of a proxy error: status, headers and the JSON body in ``shape``."""
    data = body(error, shape)
    length = (b"content-length", b"%d" % len(data))
    # nosniff: a browser never sniffs the proxy's own error into a page or a script.
    own = [(b"content-type", b"application/json"), length, (b"x-content-type-options", b"nosniff")]
    return error.status, [*own, *error.headers], data


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
    status = 400
    openai_type = "invalid_request_error"
    code = "invalid_parameter"


class Unauthorized(ProxyError):
    status = 401
    openai_type = "invalid_request_error"
    code = "invalid_api_key"
    headers = ((b"www-authenticate", b"Bearer"),)


class AdminUnauthorized(Unauthorized):
    code = "invalid_admin_token"


class AdminTokenRequired(ProxyError):
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


class UpstreamLacksApi(ProxyError):
    """404: the routed upstream answered the wire API's path with a bare 404
    (:mod:`proxy.api.noapi`)."""

    status = 404
    openai_type = "invalid_request_error"
    code = "upstream_lacks_api"


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
    headers = ((b"connection", b"close"),)  # the rest of a slow body is not worth waiting for


class UnsupportedEncoding(ProxyError):
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


class BadParam(ValueError):
    """A rule parameter whose value the rule cannot work with (raised by ``Rule.check_params``).

    The policy builder turns it into an error naming the config key, so that a bad value fails
    at start and never at request time.
    """

    def __init__(self, param: str, problem: str) -> None:
        super().__init__(f"{param}: {problem}")
        self.param = param
        self.problem = problem


class MalformedHistory(ValueError):
    """A body no policy can work on: the proxy always answers 400 (never forwards it)."""

    def __init__(self, message: str, path: str | None) -> None:
        super().__init__(message)
        self.path = path


class AmbiguousBody(ValueError):
    """A saved body more than one API could have sent (``check`` then needs ``--api``)."""


class Unreadable(Exception):
    """Input or configuration ``check`` cannot work on; its message is the one-line reason."""


class ClientGone(Exception):
    """The client went away before its request was answered."""


class InvalidQuery(ValueError):
    """A repair-log query parameter is out of range or malformed; ``param`` names it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


class RepairLogError(Exception):
    """A repair-log operation failed."""


class RepairLogUnavailable(RepairLogError):
    """The backend cannot be reached or written right now."""
