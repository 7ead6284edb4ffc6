"""Error bodies of Gemini's native API on its three endpoints (gemini-native.md §2).

- AI Studio (``aistudio``) and Vertex (``vertex``): Google's RPC status, pretty-printed as
  Google's front end prints it, ``{"error": {"code": 400, "message": …, "status":
  "INVALID_ARGUMENT"}}``; parse errors (unknown names, wrong types) add a
  ``google.rpc.BadRequest`` detail with one ``fieldViolations`` entry per error (koog#735,
  pydantic-ai#5081).
- Code Assist (``code-assist``): the same envelope plus ``"errors": [{"message", "domain":
  "global", "reason": "badRequest"}]`` between ``message`` and ``status`` (gemini-cli#16415,
  CLIProxyAPI#17). gemini-cli prints its ``:streamGenerateContent`` errors inside a JSON array;
  whether the server sends the array is reported, not seen (§2): this emulator sends it.
- A ``:streamGenerateContent`` without ``alt=sse`` answers a JSON array, so its errors are
  wrapped in one too (ours: §2 open question 5).

The texts of forced statuses (``x-emulator-status``) are Google's where one is widely seen and
ours otherwise (marked). Every body ends with a newline, as Google's do.
"""

from __future__ import annotations

import json
from typing import Any

from proxy.emulator.common import GOOGLE_STATUS, Rejection

AISTUDIO, VERTEX, CODE_ASSIST = "aistudio", "vertex", "code-assist"
ENDPOINTS = (AISTUDIO, VERTEX, CODE_ASSIST)
BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
#: Texts sent with a forced status or a mid-stream error.
FORCED = {
    400: "Request contains an invalid argument.",
    401: "API key not valid. Please pass a valid API key.",
    403: "The caller does not have permission",
    404: "Requested entity was not found.",
    429: "Resource has been exhausted (e.g. check quota).",
    500: "An internal error has occurred. Please retry or report in "
    "https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
    504: "Deadline exceeded",  # ours
}
#: ``errors[].reason`` on Code Assist: ``badRequest`` is seen (§2); the others are ours.
_REASONS = {400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "notFound"}
_REASONS |= {429: "rateLimitExceeded", 500: "backendError", 503: "backendError"}


def status_name(status: int) -> str:
    return GOOGLE_STATUS.get(status, "UNKNOWN")


def error_object(endpoint: str, status: int, message: str) -> dict[str, Any]:
    """The ``error`` member: code, message, (CA: errors), status."""
    error: dict[str, Any] = {"code": status, "message": message}
    if endpoint == CODE_ASSIST:
        reason = _REASONS.get(status, "backendError")
        error["errors"] = [{"message": message, "domain": "global", "reason": reason}]
    error["status"] = status_name(status)
    return error


def google_error(
    endpoint: str,
    rule: str,
    message: str,
    status: int = 400,
    *,
    violations: list[tuple[str, str]] | None = None,
) -> Rejection:
    """`message` in `endpoint`'s envelope; `violations` (field, description) become a
    ``BadRequest`` detail (an empty field is left out, as for top-level unknown names)."""
    error = error_object(endpoint, status, message)
    if violations:
        entries = [
            ({"field": field} if field else {}) | {"description": description}
            for field, description in violations
        ]
        error["details"] = [{"@type": BAD_REQUEST, "fieldViolations": entries}]
    body = json.dumps({"error": error}, indent=2, ensure_ascii=False) + "\n"
    return Rejection(status, body.encode(), rule, message)


def as_array(rejection: Rejection) -> Rejection:
    """The same error inside a JSON array, as a non-SSE stream (and CA's stream) answers it."""
    body = b"[" + rejection.body.rstrip(b"\n") + b"\n]"
    return Rejection(rejection.status, body, rejection.rule, rejection.message, rejection.headers)


def forced(endpoint: str, status: int) -> Rejection:
    """The error for a status forced by ``x-emulator-status``."""
    return google_error(endpoint, f"N-{status}", FORCED.get(status, "Emulated error."), status)


def not_found(endpoint: str, method: str, path: str) -> Rejection:
    """An unknown path or method (Google's front end answers an HTML page; JSON is ours)."""
    return google_error(endpoint, "N-404", f"Method not found: {method} {path}", 404)


def not_json(endpoint: str, detail: str) -> Rejection:
    """A body that does not parse (Google adds the offending line; ours keeps the first part)."""
    text = f"Invalid JSON payload received. {detail}"
    return google_error(endpoint, "N-json", text, violations=[("", text)])


def stream_error(status: int) -> dict[str, Any]:
    """The bare error object a 200 stream carries as an event (§2: AS shape, also on CA)."""
    message = FORCED.get(status, "Emulated error.")
    return {"error": {"code": status, "message": message, "status": status_name(status)}}
