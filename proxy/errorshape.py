"""The JSON an error becomes, in the shape the API's clients parse.

OpenAI's ``{"error": {"message", "type", "param", "code"}}`` everywhere, except on the paths of a
wire API whose row says otherwise: ``error_shape = "anthropic"`` (``/v1/messages``),
``{"type": "error", "error": {"type", "message"}}`` with Anthropic's error types;
``error_shape = "google"`` (Gemini's native API), ``{"error": {"code", "message", "status"}}``.
The errors themselves are :mod:`proxy.errors`; this module reads them through
:class:`Renderable` only.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

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


class Renderable(Protocol):
    """What an error answer is made of (:class:`proxy.errors.ProxyError`)."""

    status: int
    openai_type: str
    code: str | None
    message: str
    param: str | None

    def extra(self) -> dict[str, Any]: ...


def payload(error: Renderable, shape: Shape = "openai") -> dict[str, Any]:
    """The error's JSON object in ``shape`` (``extra()`` fields, the findings, in each)."""
    if shape == "google":
        return {"error": _google(error)}
    if shape == "anthropic":
        kind = ANTHROPIC_TYPES.get(error.status)
        if kind is None:
            kind = "invalid_request_error" if error.status < 500 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": error.message, **error.extra()}}
    fields = {"message": error.message, "type": error.openai_type, "param": error.param}
    return {"error": {**fields, "code": error.code, **error.extra()}}


def _google(error: Renderable) -> dict[str, Any]:
    """Google's envelope (gemini-native.md §2): code, message, status, and a ``BadRequest``
    detail naming the field (``contents[3].parts[1]``) when the error has one."""
    found: dict[str, Any] = {
        "code": error.status,
        "message": error.message,
        "status": GOOGLE_STATUSES.get(error.status, "INTERNAL"),
    }
    if error.param is not None:
        violation = {"field": error.param, "description": error.message}
        detail = {"@type": "type.googleapis.com/google.rpc.BadRequest"}
        found["details"] = [{**detail, "fieldViolations": [violation]}]
    return {**found, **error.extra()}


def body(error: Renderable, shape: Shape = "openai") -> bytes:
    return orjson.dumps(payload(error, shape))


def event(error: Renderable, shape: Shape = "openai") -> bytes:
    """The error as the last event of an SSE stream (Anthropic names it ``error``)."""
    head = b"event: error\n" if shape == "anthropic" else b""
    return head + b"data: " + body(error, shape) + b"\n\n"
