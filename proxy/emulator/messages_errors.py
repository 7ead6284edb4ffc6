"""Each provider's error body on its Anthropic-compatible ``/v1/messages`` endpoint.

Shapes from /work/shared/anthropic-messages.md §2:

- Anthropic: ``{"type":"error","error":{"type":"invalid_request_error","message":…},
  "request_id":"req_…"}`` plus the header ``request-id`` (platform.claude.com errors page).
- DeepSeek: pairing texts in Anthropic's shape without ``request_id``; thinking errors and serde
  errors in its OpenAI shape ``{"error":{"message","type","param":null,"code"}}`` (the serde
  shape is ours: only the text is seen).
- Kimi: ``{"error":{"type":"invalid_request_error","message":…},"type":"error"}``.
- GLM: 422 ``{"detail":[…]}`` (FastAPI) for a bad role; crashes as ``{"type":"error","error":
  {"type":"api_error","code":"500","message":"[500][…][id]"}}``; parameter errors ``1214``/``1210``
  in that same envelope (the envelope for 1214 is ours: the code and text are seen via relays).
- MiniMax: Anthropic's shape with ``request_id``, texts ``invalid params, … (2013)``.

Every ``request_id`` derives from the message, so answers are reproducible.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from proxy.emulator.common import Rejection

MESSAGES_PROVIDERS = ("anthropic", "deepseek", "kimi", "glm", "minimax")

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
#: Texts sent with a forced status (``x-emulator-status``); Anthropic's are its errors page's.
FORCED = {
    401: "invalid x-api-key",
    404: "Not Found",
    413: "Request exceeds the maximum allowed number of bytes.",
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    503: "Service Unavailable",  # ours
    529: "Overloaded",
}
GLM_PARAMS = "messages 参数非法。请检查文档。"
_RETRY_AFTER = (429, 503, 529)


def compact(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _request_id(provider: str, message: str) -> str:
    digest = hashlib.blake2b(f"{provider}:{message}".encode(), digest_size=12).hexdigest()
    return f"req_011C{digest}" if provider == "anthropic" else digest


def error_type(status: int) -> str:
    return _ANTHROPIC_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def anthropic_shape(
    provider: str, rule: str, message: str, status: int = 400, *, request_id: bool = True
) -> Rejection:
    """Anthropic's envelope (Anthropic, MiniMax; DeepSeek without ``request_id``)."""
    payload: dict[str, Any] = {
        "type": "error",
        "error": {"type": error_type(status), "message": message},
    }
    headers: tuple[tuple[bytes, bytes], ...] = ()
    if request_id:
        payload["request_id"] = _request_id(provider, message)
        headers = ((b"request-id", payload["request_id"].encode()),)
    if status in _RETRY_AFTER:
        headers += ((b"retry-after", b"1"),)
    return Rejection(status, compact(payload), rule, message, headers)


def openai_shape(rule: str, message: str, status: int = 400) -> Rejection:
    """DeepSeek's OpenAI-shaped error (its thinking and deserialization errors)."""
    type_ = error_type(status) if status != 400 else "invalid_request_error"
    payload = {"error": {"message": message, "type": type_, "param": None, "code": type_}}
    return Rejection(status, compact(payload), rule, message)


def kimi_shape(rule: str, message: str, status: int = 400) -> Rejection:
    payload = {"error": {"type": error_type(status), "message": message}, "type": "error"}
    return Rejection(status, compact(payload), rule, message)


def glm_shape(rule: str, message: str, status: int = 400, code: str = "1214") -> Rejection:
    """GLM's Anthropic envelope with its business ``code``."""
    type_ = "api_error" if status >= 500 else "invalid_request_error"
    payload = {"type": "error", "error": {"type": type_, "code": code, "message": message}}
    return Rejection(status, compact(payload), rule, message)


def glm_literal_error(rule: str, loc: list[Any], value: Any) -> Rejection:
    """GLM's FastAPI 422 for a role outside ``user``/``assistant`` (zai-org/GLM-5#74)."""
    msg = "Input should be 'user' or 'assistant'"
    detail = {
        "type": "literal_error",
        "loc": loc,
        "msg": msg,
        "input": value,
        "ctx": {"expected": "'user' or 'assistant'"},
    }
    return Rejection(422, compact({"detail": [detail]}), rule, msg)


def reject(provider: str, rule: str, message: str, status: int = 400) -> Rejection:
    """`message` in `provider`'s usual envelope for a validation error."""
    if provider == "kimi":
        return kimi_shape(rule, message, status)
    if provider == "glm":
        return glm_shape(rule, message, status, code=str(status) if status != 400 else "1214")
    return anthropic_shape(provider, rule, message, status, request_id=provider != "deepseek")


def forced(provider: str, status: int) -> Rejection:
    """The provider's error for a status forced by ``x-emulator-status``."""
    text = FORCED.get(status, "Emulated error.")  # ours when no text is known
    return reject(provider, f"M-{status}", text, status)


def not_found(provider: str, method: str, path: str) -> Rejection:
    """A 404 for an unknown path (Anthropic answers ``Not Found``; the others' text is ours)."""
    return reject(provider, "M-404", "Not Found", 404)


def not_json(provider: str, line: int, column: int) -> Rejection:
    """A body that does not parse (Anthropic's wording is ours; DeepSeek's is axum's)."""
    if provider == "deepseek":
        text = f"Failed to parse the request body as JSON: expected value at line {line} "
        return openai_shape("M-json", text + f"column {column}")
    return reject(provider, "M-json", "There was an error parsing the body of your request.")
