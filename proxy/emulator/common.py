"""Shared pieces of the emulators: the `Rejection` value and the three providers' error shapes.

Each shape is reproduced as the provider sends it on the wire:

- OpenAI: ``{"error": {"message", "type", "param", "code"}}`` pretty-printed with 4 spaces and a
  trailing newline, as api.openai.com answers.
- DeepSeek: the same four keys, compact JSON, ``code`` repeating the type
  (``{"error":{"message":"...","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}``).
- Gemini (OpenAI-compatible endpoint): a JSON *array* holding one Google RPC error,
  ``[{"error": {"code": 400, "message": "...", "status": "INVALID_ARGUMENT"}}]``, printed the
  way Google's front end prints it (``[{`` then 2-space indentation, ``}`` and ``]`` on their own
  lines).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeGuard

GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(frozen=True, slots=True)
class Rejection:
    """What a provider answers to an invalid request.

    `body` holds the exact bytes the provider sends, `rule` the provider-rules.md row id
    (``O1``, ``D14``, ``G7``…, or ``O-schema``/``D-schema``/``G-schema`` for a plain schema
    error no row covers, ``*-json`` for an unparsable body; ``M1``… for the Messages rules of
    anthropic-messages.md), `message` the error text alone and `headers` the extra response
    headers the provider sends (Anthropic's ``request-id``).
    """

    status: int
    body: bytes
    rule: str
    message: str = ""
    headers: tuple[tuple[bytes, bytes], ...] = ()


def openai_rejection(
    rule: str,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    status: int = 400,
    type_: str = "invalid_request_error",
) -> Rejection:
    """An OpenAI error: `invalid_request_error` unless told otherwise."""
    payload = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    body = json.dumps(payload, indent=4) + "\n"
    return Rejection(status, body.encode(), rule, message)


def deepseek_rejection(
    rule: str,
    message: str,
    *,
    status: int = 400,
    type_: str = "invalid_request_error",
    code: str | None = "invalid_request_error",
) -> Rejection:
    """A DeepSeek error: compact JSON, `param` always null."""
    payload = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return Rejection(status, body.encode(), rule, message)


def gemini_rejection(
    rule: str,
    message: str,
    *,
    status: int = 400,
    details: list[dict[str, Any]] | None = None,
) -> Rejection:
    """A Gemini error: a one-element JSON array around a Google RPC status."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": GOOGLE_STATUS.get(status, "UNKNOWN"),
    }
    if details is not None:
        error["details"] = details
    body = "[" + json.dumps({"error": error}, indent=2) + "\n]"
    return Rejection(status, body.encode(), rule, message)


_KINDS = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a decimal"),
    (str, "a string"),
    (list, "an array"),
)


def json_kind(value: Any) -> str:
    """OpenAI's name for a JSON value's type, as in ``but got an object instead``."""
    if value is None:
        return "null"
    return next((name for kind, name in _KINDS if isinstance(value, kind)), "an object")


def nonempty_list(value: Any) -> TypeGuard[list[Any]]:
    """True for a list with at least one element."""
    return isinstance(value, list) and len(value) > 0
