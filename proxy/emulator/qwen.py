"""Strict emulation of Alibaba DashScope's compatible-mode `/v1/chat/completions` (Qwen).

DashScope applies OpenAI's message rules and words them under the prefix
``<400> InternalError.Algo.InvalidParameter:`` with double quotes; errors are
``{"error":{"message":…,"type":"invalid_request_error","param":null,
"code":"invalid_parameter_error"},"id":"chatcmpl-…","request_id":"…"}``.

Rows implemented (provider-rules.md §4 "Qwen / DashScope", providers-second-tier.md B1):

- Q3 (§4 ``developer`` rejected, ``function`` accepted): ``developer is not one of ['system',
  'assistant', 'user', 'tool', 'function'] - 'messages.[0].role'``.
- Q5 (§4 content type): ``Invalid type for 'messages.[0].content': expected one of a string or
  array of objects, but got an object instead.``
- Q4 (§4 empty ``tool_calls``, REPORTED): ``Empty tool_calls is not supported in message``.
- Q1 (§4 orphan tool message): ``messages with role "tool" must be a response to a preceeding
  message with "tool_calls".`` (also for an id that answers no pending call: ours, OpenAI
  words that case apart as O3).
- Q2 (§4 unanswered calls): ``An assistant message with "tool_calls" must be followed by tool
  messages responding to each "tool_call_id". The following tool_call_ids did not have response
  messages: message[15].role`` (DashScope names a message, not ids; we name the assistant
  message, as OpenAI's ``param`` does: the reported index is unexplained).

All texts carry the prefix (seen on Q1 and Q2; assumed on Q3-Q5). Order: schema per message
(Q3, Q5, Q4) for all messages, then the pairing walk. Calls left unanswered at the very end are
accepted (OpenAI's O23). Unknown keys are accepted. Malformed values: ``Q-schema`` (ours).
"""

from __future__ import annotations

import hashlib
from typing import Any

from proxy.emulator.common import Rejection, json_kind, nonempty_list
from proxy.emulator.tier2 import Dialect, compact, first_fault

PREFIX = "<400> InternalError.Algo.InvalidParameter: "
ROLES = ("system", "assistant", "user", "tool", "function")
_Q1 = 'messages with role "tool" must be a response to a preceeding message with "tool_calls".'
_Q2 = (
    'An assistant message with "tool_calls" must be followed by tool messages responding to '
    'each "tool_call_id". The following tool_call_ids did not have response messages: '
)
_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "limit_requests"}
_CODES |= {500: "internal_error", 503: "ServiceUnavailable"}


def reject(rule: str, message: str, status: int = 400) -> Rejection:
    """DashScope's error body; ids derive from the message so answers are reproducible."""
    digest = hashlib.blake2b(f"{rule}:{message}".encode(), digest_size=16).hexdigest()
    error = {
        "message": message,
        "type": "invalid_request_error" if status < 500 else "internal_error",
        "param": None,
        "code": _CODES.get(status, "invalid_parameter_error"),
    }
    request_id = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:]}"
    payload = {"error": error, "id": f"chatcmpl-{digest}", "request_id": request_id}
    return Rejection(status, compact(payload), rule, message)


def invalid(rule: str, text: str) -> Rejection:
    """A 400 under DashScope's prefix."""
    return reject(rule, PREFIX + text)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error DashScope reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        return invalid("Q-json", "Input should be a valid dictionary")  # ours
    messages = body.get("messages")
    if not nonempty_list(messages):
        return invalid("Q-schema", "Input should be a non-empty list - 'messages'")  # ours
    for i, msg in enumerate(messages):
        found = _schema(msg, i)
        if found is not None:
            return found
    fault = first_fault(messages, trailing_ok=True)
    if fault is None:
        return None
    if fault.kind == "unanswered":
        return invalid("Q2", f"{_Q2}message[{fault.block}].role")
    return invalid("Q1", _Q1)


def _schema(msg: Any, i: int) -> Rejection | None:
    if not isinstance(msg, dict):
        return invalid("Q-schema", f"Input should be a valid dictionary - 'messages.[{i}]'")
    role = msg.get("role")
    if role not in ROLES:
        shown = role if isinstance(role, str) else repr(role)
        return invalid("Q3", f"{shown} is not one of {list(ROLES)} - 'messages.[{i}].role'")
    content = msg.get("content")
    if content is not None and not isinstance(content, str | list):
        text = (
            f"Invalid type for 'messages.[{i}].content': expected one of a string or array of "
            f"objects, but got {json_kind(content)} instead."
        )
        return invalid("Q5", text)
    calls = msg.get("tool_calls")
    if calls == []:
        return invalid("Q4", "Empty tool_calls is not supported in message")
    if calls is not None and not (isinstance(calls, list) and all(map(_call_ok, calls))):
        return invalid("Q-schema", f"Invalid 'messages.[{i}].tool_calls'")  # ours
    return None


def _call_ok(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("function"), dict)


DIALECT = Dialect(
    prefix="Q",
    validate=validate,
    reject=reject,
    not_found="Requested resource not found: {path}",  # ours
    not_json=PREFIX + "Input should be a valid JSON",  # ours
    forced={
        401: "Incorrect API key provided. ",
        429: "Requests rate limit exceeded, please try again later.",
        500: "An internal error has occured, please try again later or contact service support.",
        503: "The service is temporarily unavailable, please try again later.",  # ours
    },
)
