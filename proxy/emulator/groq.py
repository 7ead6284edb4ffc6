"""Strict emulation of Groq's `/openai/v1/chat/completions` message validation.

Groq validates each message against a per-role JSON schema and reports the first violation as
``'messages.N' : for 'role:ROLE' the following must be satisfied[(PATH : PROBLEM)]``; errors
are ``{"error":{"message":…,"type":"invalid_request_error"}}``.

Rows implemented (provider-rules.md §4 "Groq", providers-second-tier.md B1):

- GQ1 (§4 strict per-message schema, B1 more keys): a key outside the role's schema:
  ``'messages.2' : for 'role:assistant' the following must be satisfied[('messages.2' :
  property 'reasoning_content' is unsupported)]``; ``timestamp``, ``metadata``, ``status``,
  ``reasoning``, ``id``, ``tool_calls`` on user… Groq appends ``, did you mean 'X'?`` for some
  keys; only the suggestions seen in reports are reproduced (`SUGGESTIONS`).
- GQ2 (client-code quotes, not in the evidence files): a required property missing:
  ``('messages.3.tool_call_id' : property 'tool_call_id' is missing)``, ``content`` on tool
  messages, ``type`` on a replayed tool call (``messages.2.tool_calls.0.type``).
- GQ3 (B1 Groq documented 400s): ``name`` on system, user or assistant messages (the doc lists
  ``messages[].name``); the text follows GQ1's pattern (ours).
- GQ4 (§4 Groq gpt-oss, REPORTED): on ``openai/gpt-oss-*`` models a tool message without
  ``name``: ``Tools should have a name!``.
- GQ5 (client-code quote): a tool message's content must be a string:
  ``('messages.3.content' : value must be a string)``.

``name`` is accepted on tool messages (gpt-oss requires it). The ``developer`` role is accepted
with the system schema (not observed either way). No pairing rule is checked: no Groq pairing
error was found. Texts for malformed values GQ1-GQ5 do not cover are ours (``GQ-schema``).
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator.common import Rejection
from proxy.emulator.tier2 import Dialect, compact

_KEYS = {
    "system": ("role", "content", "name"),
    "developer": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "name", "tool_calls"),
    "tool": ("role", "content", "tool_call_id", "name"),
}
_REQUIRED = {"tool": ("content", "tool_call_id"), "assistant": ()}
_NAME_REFUSED = frozenset(("system", "developer", "user", "assistant"))
_CALL_KEYS = ("id", "type", "function")
_FUNCTION_KEYS = ("name", "arguments")
#: "did you mean" suggestions seen in reports (ServiceStack/llms#17, chatboxai#2083, julep#885,
#: and client code quoting Groq); Groq's own similarity rule is unknown.
SUGGESTIONS = {
    "id": "role",
    "reasoning": "role",
    "model_used": "role",
    "tool_calls": "tool_call_id",
}
_GPT_OSS = re.compile(r"(?:openai/)?gpt-oss")


def reject(rule: str, message: str, status: int = 400) -> Rejection:
    """Groq's error body (``code`` added for 401/429 as Groq sends it)."""
    error: dict[str, Any] = {"message": message, "type": "invalid_request_error"}
    if status == 401:
        error["code"] = "invalid_api_key"
    elif status == 429:
        error.update(type="tokens", code="rate_limit_exceeded")
    elif status >= 500:
        error["type"] = "internal_server_error"
    return Rejection(status, compact({"error": error}), rule, message)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error Groq reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        return reject("GQ-json", "request body must be a JSON object")  # ours
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return reject("GQ-schema", "'messages' : minimum number of items is 1")  # ours
    gpt_oss = _GPT_OSS.match(str(body.get("model", ""))) is not None
    for i, msg in enumerate(messages):
        found = _message(msg, i, gpt_oss)
        if found is not None:
            return found
    return None


def _failed(rule: str, i: int, role: str, path: str, problem: str) -> Rejection:
    text = (
        f"'messages.{i}' : for 'role:{role}' the following must be satisfied"
        f"[('{path}' : {problem})]"
    )
    return reject(rule, text)


def _message(msg: Any, i: int, gpt_oss: bool) -> Rejection | None:
    if not isinstance(msg, dict) or msg.get("role") not in _KEYS:
        return reject(
            "GQ-schema", f"'messages.{i}' : discriminator property 'role' has invalid value"
        )
    role = msg["role"]
    found = _keys(msg, i, role)
    if found is not None:
        return found
    if role == "tool":
        return _tool(msg, i, gpt_oss)
    if role == "assistant" and msg.get("tool_calls") is not None:
        return _calls(msg["tool_calls"], i)
    return None


def _keys(msg: dict[str, Any], i: int, role: str) -> Rejection | None:
    """Unknown (or refused) keys in key order, then the first missing required key."""
    for key in msg:
        if key == "name" and role in _NAME_REFUSED:
            return _failed("GQ3", i, role, f"messages.{i}", "property 'name' is unsupported")
        if key not in _KEYS[role]:
            return _failed("GQ1", i, role, f"messages.{i}", _unsupported(key))
    for key in _REQUIRED.get(role, ("content",)):
        if key not in msg:
            return _failed("GQ2", i, role, f"messages.{i}.{key}", f"property '{key}' is missing")
    return None


def _unsupported(key: str) -> str:
    hint = SUGGESTIONS.get(key)
    suffix = f", did you mean '{hint}'?" if hint else ""
    return f"property '{key}' is unsupported{suffix}"


def _tool(msg: dict[str, Any], i: int, gpt_oss: bool) -> Rejection | None:
    if not isinstance(msg["content"], str):
        return _failed("GQ5", i, "tool", f"messages.{i}.content", "value must be a string")
    if gpt_oss and not msg.get("name"):
        return reject("GQ4", "Tools should have a name!")
    return None


def _calls(calls: Any, i: int) -> Rejection | None:
    path = f"messages.{i}.tool_calls"
    if not isinstance(calls, list):
        return _failed("GQ-schema", i, "assistant", path, "value must be an array")
    for j, call in enumerate(calls):
        found = _object(call, i, f"{path}.{j}", _CALL_KEYS)
        if found is None:
            found = _object(call["function"], i, f"{path}.{j}.function", _FUNCTION_KEYS)
        if found is not None:
            return found
    return None


def _object(obj: Any, i: int, path: str, keys: tuple[str, ...]) -> Rejection | None:
    if not isinstance(obj, dict):
        return _failed("GQ-schema", i, "assistant", path, "value must be an object")
    for key in obj:
        if key not in keys:
            return _failed("GQ1", i, "assistant", path, _unsupported(key))
    for key in keys:
        if key not in obj:
            return _failed("GQ2", i, "assistant", f"{path}.{key}", f"property '{key}' is missing")
    return None


DIALECT = Dialect(
    prefix="GQ",
    validate=validate,
    reject=reject,
    not_found="Unknown request URL: {method} {path}. Please check the URL for typos, or see "
    "the docs at https://console.groq.com/docs/",
    not_json="We could not parse the JSON body of your request.",  # ours
    forced={
        401: "Invalid API Key",
        429: "Rate limit reached for model `llama-3.3-70b-versatile` in organization "
        "`org_emulator` on tokens per minute (TPM): Limit 6000, Used 6000, Requested 100. "
        "Please try again in 1s.",
        500: "Internal Server Error",
        503: "Service Unavailable",
    },
)
