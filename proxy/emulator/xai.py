"""Strict emulation of xAI's `/v1/chat/completions` message validation.

Errors are ``{"code":"Client specified an invalid argument","error":…}`` (400), as xAI's gRPC
gateway maps ``INVALID_ARGUMENT``.

Rows implemented (provider-rules.md §4 "xAI", providers-second-tier.md B1):

- X5 (B1 xAI ``tool_choice``): ``Invalid request content: A tool_choice was set on the request
  but no tools were specified.`` (request level, checked first; ``"none"``/``"auto"`` too).
- X1 (§4 xAI ``name``): ``Only messages of role 'user' can have a name.``
- X4 (§4 xAI content elements): ``Invalid request content: Each message must have at least one
  content element.`` for ``content: []`` and for a null or missing content, tool-call turns
  included (issue 22: ``content: null`` next to ``tool_calls`` is refused; the missing key
  reading as null is ours).
- X3 (§4 xAI single text): ``The model expects a single `text` element per message.`` for a
  content array with more than one text part.
- X2 (B1 xAI arguments): a historical ``arguments`` string that is not JSON: ``The arguments to
  a tool_call with ID 'initial_list_datasets' are not a valid JSON string. Parsing error:
  Error("EOF while parsing a value", line: 1, column: 0)`` (serde_json's message; verified for
  ``""`` only, see `tier2.serde_json_error`). Any JSON value passes.

Order: X5, then every message in order: X1, X4, X3, X2. No pairing rule is checked: no xAI
pairing error was found. Texts for malformed values (``X-schema``) are ours.
"""

from __future__ import annotations

from typing import Any

from proxy.emulator.common import Rejection
from proxy.emulator.tier2 import Dialect, compact, serde_json_error

ROLES = ("system", "developer", "user", "assistant", "tool")
_INVALID = "Client specified an invalid argument"
_CODES = {401: "Unauthenticated", 403: "Permission denied", 404: "Not found"}
_CODES |= {429: "Too many requests", 500: "Internal error", 503: "Service unavailable"}


def reject(rule: str, message: str, status: int = 400) -> Rejection:
    """xAI's error body: the gRPC status as ``code``, the text as ``error``."""
    body = compact({"code": _CODES.get(status, _INVALID), "error": message})
    return Rejection(status, body, rule, message)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error xAI reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        return reject("X-json", "Invalid request content: expected a JSON object")  # ours
    if body.get("tool_choice") is not None and not body.get("tools"):
        text = (
            "Invalid request content: A tool_choice was set on the request but no tools were "
            "specified."
        )
        return reject("X5", text)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return reject("X-schema", "Invalid request content: messages must not be empty")  # ours
    for i, msg in enumerate(messages):
        found = _message(msg, i)
        if found is not None:
            return found
    return None


def _message(msg: Any, i: int) -> Rejection | None:
    if not isinstance(msg, dict) or msg.get("role") not in ROLES:
        return reject("X-schema", f"Invalid request content: invalid message at index {i}")
    if "name" in msg and msg["role"] != "user":
        return reject("X1", "Only messages of role 'user' can have a name.")
    calls = msg.get("tool_calls") if msg["role"] == "assistant" else None
    return _content(msg.get("content")) or _arguments(calls, i)


def _content(content: Any) -> Rejection | None:
    if content == [] or content is None:
        text = "Invalid request content: Each message must have at least one content element."
        return reject("X4", text)
    if isinstance(content, list):
        texts = [part for part in content if isinstance(part, dict) and part.get("type") == "text"]
        if len(texts) > 1:
            return reject("X3", "The model expects a single `text` element per message.")
    return None


def _arguments(calls: Any, i: int) -> Rejection | None:
    if calls is None:
        return None
    if not isinstance(calls, list):
        return reject("X-schema", f"Invalid request content: invalid tool_calls at index {i}")
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(arguments, str):
            return reject("X-schema", f"Invalid request content: invalid tool call at index {i}")
        error = serde_json_error(arguments)
        if error is not None:
            text = (
                f"The arguments to a tool_call with ID '{call.get('id')}' are not a valid JSON "
                f"string. Parsing error: {error}"
            )
            return reject("X2", text)
    return None


DIALECT = Dialect(
    prefix="X",
    validate=validate,
    reject=reject,
    not_found="The requested resource was not found. Please check the URL and try again.",
    not_json="Invalid request content: failed to parse the request body as JSON",  # ours
    forced={
        401: "Incorrect API key provided: xa***or. You can obtain an API key from "
        "https://console.x.ai.",
        429: "Too many requests. Please try again in 1s.",  # ours
        500: "Internal error",  # ours
        503: "Service temporarily unavailable. The model is at capacity.",  # ours
    },
)
