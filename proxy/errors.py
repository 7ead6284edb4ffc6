"""The proxy's own errors and their one mapping to OpenAI-shaped JSON.

```
ProxyError                  base: .status, .openai_type, .code, .param
├── ConfigError             start-up only (bad config, unknown rule or action)
├── HistoryRejected         the policy rejected the history → 400 invalid_tool_history
├── BadRequestBody          not JSON / not an object / messages malformed → 400 (413 when too big)
├── Unauthorized            client key missing or wrong → 401
├── RequestTimeout          the request body did not arrive within server.body_timeout → 408
├── UnknownUpstream         → 400 unknown_upstream (404 for an unknown path prefix)
└── UpstreamError
    ├── UpstreamTimeout     → 504
    └── UpstreamUnavailable → 502
```

Upstream error *responses* are never wrapped: they pass through as they are.
"""

from __future__ import annotations

from typing import Any

import orjson


class ProxyError(Exception):
    status = 500
    openai_type = "server_error"
    code: str | None = None

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param

    def payload(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "type": self.openai_type,
                "param": self.param,
                "code": self.code,
            }
        }

    def body(self) -> bytes:
        return orjson.dumps(self.payload())


class ConfigError(ProxyError):
    """Raised at start-up only; the message names the key and the allowed values."""

    code = "config_error"


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

    def payload(self) -> dict[str, Any]:
        payload = super().payload()
        payload["error"]["findings"] = self.findings
        return payload


class Unauthorized(ProxyError):
    status = 401
    openai_type = "invalid_request_error"
    code = "invalid_api_key"


class RequestTimeout(ProxyError):
    """The client took longer than ``server.body_timeout`` to send its body (slowloris)."""

    status = 408
    openai_type = "invalid_request_error"
    code = "request_timeout"


class UnknownUpstream(ProxyError):
    openai_type = "invalid_request_error"
    code = "unknown_upstream"

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class UpstreamError(ProxyError):
    openai_type = "upstream_error"


class UpstreamTimeout(UpstreamError):
    status = 504
    code = "upstream_timeout"


class UpstreamUnavailable(UpstreamError):
    status = 502
    code = "upstream_unavailable"
