"""Strict emulation of Mistral La Plateforme's `/v1/chat/completions` message validation.

Two passes, as the API runs them: a pydantic schema (422, every problem listed) then
mistral-common's ``MistralRequestValidatorV3`` in serving mode (400, first problem only; its
source, mistralai/mistral-common ``validator.py``, gives the order and the texts).

Rows implemented (provider-rules.md §4 "Mistral", providers-second-tier.md B1):

- M6 (B1 Mistral strict schema): any key outside Mistral's message schema → 422
  ``{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","messages",
  6,"assistant","tool_calls",0,"name"],"msg":"Extra inputs are not permitted","input":null}]},
  "type":"invalid_request_error","param":null,"code":null}``; e.g. ``reasoning_content`` or
  ``metadata`` on assistant messages, ``name`` on user messages. Allowed: system/user ``role``,
  ``content``; assistant also ``tool_calls``, ``prefix``; tool ``tool_call_id``, ``name``;
  tool calls ``id``, ``type``, ``function``, ``index``; functions ``name``, ``arguments``.
- M5 (§4 last role): ``Expected last role User or Tool (or Assistant with prefix True) for
  serving but got assistant``.
- M2 (§4 order, B1 tool after system): ``Unexpected role 'user' after role 'tool'`` (also
  ``'tool' after 'user'``, ``'tool' after 'system'``, ``'system' after 'tool'``).
- M3 (§4 counts): ``Not the same number of function calls and responses`` (counts only, also
  at the end of the history).
- M4 (§4 content or tool_calls): ``Assistant message must have either content or tool_calls,
  but not none.`` (2025 wording; ``""`` counts as no content; content with calls accepted).
- M1 (§4 9-char ids): ``Tool call id was turn1_0 but must be a-z, A-Z, 0-9, with a length of
  9.`` on ``tool_calls[].id`` and on a tool message's ``tool_call_id``.
- M7 (mistral-common only, no report): function names ``^[a-zA-Z0-9_-]{1,64}$``.

400 bodies: ``{"object":"error","message":…,"type":…,"param":null,"code":…}`` with type
``invalid_request_message_order`` code ``"3230"`` (M2, M3; M5 assumed), ``invalid_function_call``
code ``"3280"`` (M1, M7) or ``invalid_request_error`` code null (M4). Malformed values (a
message that is not an object, an unknown role, ``tool_calls`` not a list of objects) get
pydantic's 422 wording under ``M-schema`` (not observed from Mistral).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

from proxy.emulator.common import Rejection, nonempty_list
from proxy.emulator.tier2 import Dialect, compact

ROLES = ("system", "user", "assistant", "tool")
_KEYS = {
    "system": frozenset(("role", "content")),
    "user": frozenset(("role", "content")),
    "assistant": frozenset(("role", "content", "tool_calls", "prefix")),
    "tool": frozenset(("role", "content", "tool_call_id", "name")),
}
_CALL_KEYS = frozenset(("id", "type", "function", "index"))
_FUNCTION_KEYS = frozenset(("name", "arguments"))
# previous role -> roles allowed next (mistral-common _validate_message_order, pre 2026-04)
_NEXT = {
    "system": ("user", "assistant", "system"),
    "user": ("assistant", "system", "user"),
    "assistant": ("assistant", "user", "tool"),
    "tool": ("assistant", "tool"),
}
_ID = re.compile(r"[a-zA-Z0-9]{9}")
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_ORDER = ("invalid_request_message_order", "3230")
_CALL = ("invalid_function_call", "3280")
_PLAIN = ("invalid_request_error", None)
_KINDS = {"M1": _CALL, "M2": _ORDER, "M3": _ORDER, "M4": _PLAIN, "M5": _ORDER, "M7": _CALL}

Problem = tuple[str, str]  # (row id, mistral-common's message)


def reject(rule: str, message: str, status: int = 400) -> Rejection:
    """Mistral's error object with a string message (status and rule pick type and code)."""
    type_, code = _KINDS.get(rule, _PLAIN)
    if status == 429:
        type_, code = "rate_limited", "1300"
    elif status != 400:
        type_ = "invalid_request_error" if status < 500 else "internal_server_error"
    payload = {"object": "error", "message": message, "type": type_, "param": None, "code": code}
    return Rejection(status, compact(payload), rule, message)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error Mistral reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        return _unprocessable("M-json", [_item("model_attributes_type", ["body"], body)])
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _unprocessable("M-schema", [_item("missing", ["body", "messages"], messages)])
    details = schema_details(messages)
    if details:
        rule = "M6" if all(d["type"] == "extra_forbidden" for d in details) else "M-schema"
        return _unprocessable(rule, details)
    problem = common_problem(messages)
    return None if problem is None else reject(*problem)


def schema_details(messages: list[Any]) -> list[dict[str, Any]]:
    """pydantic's error items for `messages`, in order (empty when the schema accepts them)."""
    details: list[dict[str, Any]] = []
    for i, msg in enumerate(messages):
        details += _message_details(msg, ["body", "messages", i])
    return details


def common_problem(messages: list[dict[str, Any]]) -> Problem | None:
    """mistral-common's first problem for schema-valid `messages` (structure, then content)."""
    return _structure(messages) or _content(messages)


def _unprocessable(rule: str, details: list[dict[str, Any]]) -> Rejection:
    payload = {
        "object": "error",
        "message": {"detail": details},
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    return Rejection(422, compact(payload), rule, details[0]["msg"])


def _item(kind: str, loc: list[Any], value: Any) -> dict[str, Any]:
    messages = {
        "extra_forbidden": "Extra inputs are not permitted",
        "missing": "Field required",
        "model_attributes_type": "Input should be a valid dictionary or object to extract "
        "fields from",
        "list_type": "Input should be a valid list",
        "union_tag_invalid": "Input tag '{tag}' found using 'role' does not match any of the "
        "expected tags: 'system', 'user', 'assistant', 'tool'",
    }
    return {"type": kind, "loc": loc, "msg": messages[kind].format(tag=value), "input": value}


def _message_details(msg: Any, loc: list[Any]) -> list[dict[str, Any]]:
    if not isinstance(msg, dict):
        return [_item("model_attributes_type", loc, msg)]
    role = msg.get("role")
    if role not in ROLES:
        return [_item("union_tag_invalid", loc, role if isinstance(role, str) else str(role))]
    loc = [*loc, role]
    details = _extras(msg, _KEYS[role], loc)
    calls = msg.get("tool_calls")
    if role == "assistant" and calls is not None:
        details += _calls_details(calls, [*loc, "tool_calls"])
    return details


def _extras(obj: dict[str, Any], allowed: frozenset[str], loc: list[Any]) -> list[dict[str, Any]]:
    return [_item("extra_forbidden", [*loc, key], obj[key]) for key in obj if key not in allowed]


def _calls_details(calls: Any, loc: list[Any]) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        return [_item("list_type", loc, calls)]
    details: list[dict[str, Any]] = []
    for j, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
            details.append(_item("model_attributes_type", [*loc, j], call))
            continue
        details += _extras(call, _CALL_KEYS, [*loc, j])
        details += _extras(call["function"], _FUNCTION_KEYS, [*loc, j, "function"])
    return details


def _structure(messages: list[dict[str, Any]]) -> Problem | None:
    """mistral-common ``_validate_message_list_structure``: size, last role, order, counts."""
    if not messages:
        return "M-schema", "Conversation must have at least one message"
    if len(messages) == 1 and messages[0]["role"] not in ("user", "system"):
        return "M5", "Conversation must start with a user message or system message"
    last = messages[-1]
    if (
        len(messages) > 1
        and last["role"] not in ("user", "tool")
        and last.get("prefix") is not True
    ):
        return "M5", (
            "Expected last role User or Tool (or Assistant with prefix True) for serving but "
            f"got {last['role']}"
        )
    for previous, current in pairwise(messages):
        if current["role"] not in _NEXT.get(previous["role"], ()):  # vLLM passes developer
            return "M2", f"Unexpected role '{current['role']}' after role '{previous['role']}'"
    return _counts(messages)


def _counts(messages: list[dict[str, Any]]) -> Problem | None:
    """``_validate_tool_calls_followed_by_tool_messages`` (the first message is skipped)."""
    expected = 0
    for msg in messages[1:]:
        if msg["role"] == "tool":
            expected -= 1
        elif msg["role"] == "assistant":
            if expected != 0:
                return "M3", "Not the same number of function calls and responses"
            calls = msg.get("tool_calls")
            expected = len(calls) if isinstance(calls, list) else 0
    if expected != 0:
        return "M3", "Not the same number of function calls and responses"
    return None


def _content(messages: list[dict[str, Any]]) -> Problem | None:
    """``_validate_message_list_content``: assistant and tool messages, in order."""
    for msg in messages:
        if msg["role"] == "assistant":
            found = _assistant(msg)
        elif msg["role"] == "tool":
            found = _tool(msg)
        else:
            found = None
        if found is not None:
            return found
    return None


def _assistant(msg: dict[str, Any]) -> Problem | None:
    calls = msg.get("tool_calls")
    if not msg.get("content") and not nonempty_list(calls):
        return "M4", "Assistant message must have either content or tool_calls, but not none."
    for call in calls or ():
        found = _call_id(call.get("id", "null")) or _name(call["function"].get("name"))
        if found is not None:
            return found
    return None


def _tool(msg: dict[str, Any]) -> Problem | None:
    name = msg.get("name")
    found = _name(name) if name is not None else None
    if found is not None:
        return found
    call_id = msg.get("tool_call_id")
    if call_id is None:
        return "M1", "Tool call id has to be defined."
    return None if _valid_id(call_id) else ("M1", _bad_id(call_id))


def _call_id(call_id: Any) -> Problem | None:
    if call_id == "null":
        return "M1", "Tool call id has to be defined in serving mode."
    return None if _valid_id(call_id) else ("M1", _bad_id(call_id))


def _valid_id(call_id: Any) -> bool:
    return isinstance(call_id, str) and _ID.fullmatch(call_id) is not None


def _bad_id(call_id: Any) -> str:
    return f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a length of 9."


def _name(name: Any) -> Problem | None:
    if isinstance(name, str) and _NAME.fullmatch(name):
        return None
    text = (
        f"Function name was {name} but must be a-z, A-Z, 0-9, or contain underscores and "
        "dashes, with a maximum length of 64."
    )
    return "M7", text


DIALECT = Dialect(
    prefix="M",
    validate=validate,
    reject=reject,
    not_found="Not Found",  # ours
    not_json="Invalid JSON body",  # ours
    forced={
        401: "Unauthorized",
        429: "Rate limit exceeded",
        500: "Internal server error",
        503: "Service unavailable",
    },
)
