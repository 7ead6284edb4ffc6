"""Strict emulation of Moonshot Kimi's `/v1/chat/completions` message validation.

Rows implemented (provider-rules.md §4 "Moonshot / Kimi", providers-second-tier.md B1):

- K1 (B1 Kimi ids): a non-tool message while calls of the preceding assistant ``tool_calls``
  message are unanswered: ``an assistant message with 'tool_calls' must be followed by tool
  messages responding to each 'tool_call_id'. The following tool_call_ids did not have response
  messages: Shell:58`` (lowercase "an"; ids like ``Shell:58`` may repeat across rounds and are
  only matched within their own block).
- K2 (B1 Kimi empty id): a tool message whose ``tool_call_id`` answers no pending call of the
  block it follows (none open, unknown, already answered, or empty): ``Invalid request:
  tool_call_id  is not found`` (two spaces for the empty id; body seen from api.moonshot.cn,
  2025-09). Using the same text for a non-empty unknown id is our extrapolation.
- K3 (§4 Moonshot thinking, B1): thinking on, an assistant message with ``tool_calls`` must
  carry ``reasoning_content`` (``""`` accepted, as reported): ``thinking is enabled but
  reasoning_content is missing in assistant tool call message at index 4``.

- K4 (issue 22): an empty system message (``""``; null, missing and ``[]`` ours): ``Invalid
  request: the message at position 0 with role 'system' must not be empty``.

Order: body and ``messages`` shape first (``K-schema``, wording ours), then one walk in message
order checking K3 then the pairing (K2, K1) on each message. Calls left unanswered at the very
end are accepted (not observed either way; OpenAI's O23). Unknown keys are accepted.

Thinking: on for ``kimi-k2-thinking*``, ``kimi-k2.5`` and later (``kimi-k2.N``, ``kimi-kN``,
N ≥ 3) unless ``"thinking": {"type": "disabled"}``; any model with ``{"type": "enabled"}``.
Errors: ``{"error":{"message":…,"type":"invalid_request_error"}}``, compact.
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator.common import Rejection, nonempty_list
from proxy.emulator.tier2 import Dialect, compact, first_fault

ROLES = ("system", "user", "assistant", "tool")
_THINKING = re.compile(r"kimi-k2-thinking|kimi-k2\.[5-9]|kimi-k[3-9]")
_K1 = (
    "an assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)
_TYPES = {401: "invalid_authentication_error", 404: "resource_not_found_error"}
_TYPES |= {429: "rate_limit_reached_error", 500: "server_error", 503: "engine_overloaded_error"}


def reject(rule: str, message: str, status: int = 400) -> Rejection:
    """Moonshot's error body (types for 401/404/429/5xx from Moonshot's error-code page,
    as we recall it: ours)."""
    type_ = _TYPES.get(status, "invalid_request_error")
    body = compact({"error": {"message": message, "type": type_}})
    return Rejection(status, body, rule, message)


def thinking_on(body: dict[str, Any]) -> bool:
    """True when Kimi runs the request in thinking mode (K3 applies, answers reason)."""
    thinking = body.get("thinking")
    switch = thinking.get("type") if isinstance(thinking, dict) else None
    if switch in ("enabled", "disabled"):
        return bool(switch == "enabled")
    model = body.get("model")
    return bool(isinstance(model, str) and _THINKING.match(model))


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error Kimi reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        return reject("K-json", "Invalid request: the request body must be a JSON object")
    messages = body.get("messages")
    if not nonempty_list(messages):
        return reject("K-schema", "Invalid request: messages must not be empty")
    for i, msg in enumerate(messages):
        found = _shape(msg, i)
        if found is not None:
            return found
    return _walk(messages, thinking_on(body))


def _shape(msg: Any, i: int) -> Rejection | None:
    """Wording ours: no Kimi schema error text was found."""
    if not isinstance(msg, dict) or msg.get("role") not in ROLES:
        return reject("K-schema", f"Invalid request: invalid role at messages[{i}]")
    if msg["role"] == "system" and msg.get("content") in (None, "", []):
        text = f"Invalid request: the message at position {i} with role 'system' must not be empty"
        return reject("K4", text)
    calls = msg.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(map(_call_ok, calls))):
        return reject("K-schema", f"Invalid request: invalid tool_calls at messages[{i}]")
    return None


def _call_ok(call: Any) -> bool:
    if not isinstance(call, dict):
        return False
    return isinstance(call.get("id"), str) and isinstance(call.get("function"), dict)


def _walk(messages: list[dict[str, Any]], thinking: bool) -> Rejection | None:
    fault = first_fault(messages, trailing_ok=True)
    stop = len(messages) if fault is None else fault.index
    for i, msg in enumerate(messages[: stop + 1]):  # K3 is checked before the pairing
        if thinking and _needs_reasoning(msg):
            text = (
                "thinking is enabled but reasoning_content is missing in assistant tool call "
                f"message at index {i}"
            )
            return reject("K3", text)
    if fault is None:
        return None
    if fault.kind == "unanswered":
        return reject("K1", _K1 + ", ".join(fault.missing))
    return reject("K2", f"Invalid request: tool_call_id {fault.call_id} is not found")


def _needs_reasoning(msg: dict[str, Any]) -> bool:
    has_calls = msg["role"] == "assistant" and nonempty_list(msg.get("tool_calls"))
    return has_calls and not isinstance(msg.get("reasoning_content"), str)


DIALECT = Dialect(
    prefix="K",
    validate=validate,
    reject=reject,
    not_found="url.not_found",  # ours
    not_json="Invalid request: the request body is not valid JSON",  # ours
    forced={
        401: "Invalid Authentication",
        429: "Your account org-emulator request reached max request: 3, please try again "
        "after 1 seconds",
        500: "Internal server error",
        503: "The engine is currently overloaded, please try again later",
    },
)
