"""Strict emulation of DeepSeek's `/chat/completions` message validation.

Rows implemented (provider-rules.md §2): D1, D2, D4, D7, D8, D9, D10, D11, D12, D13, D14
(D9-D11, D13, D14 in `deepseek_schema`).

Order, as DeepSeek sees a request: the body is deserialized first (serde: a non-object body,
a missing or non-array ``messages``, then every message in order, see `deepseek_schema`);
then one semantic walk in message order checking, for each message: D7 and D8 (legacy R1 model
only), D12 (assistant with neither content nor tool calls), D4 (thinking mode), then the
pairing D1 (a tool message that answers no pending call of the preceding assistant
``tool_calls`` message: none open, unknown id, or already answered) and D2 (a non-tool message,
``system`` included, or the end of the history, while calls are unanswered).

Model switches (``model`` and ``thinking`` of the request):

- thinking mode (D4: assistant messages with ``tool_calls`` must carry a string
  ``reasoning_content``, ``""`` accepted): ``deepseek-reasoner`` and ``deepseek-v4-*`` unless
  ``"thinking": {"type": "disabled"}``; any model with ``"thinking": {"type": "enabled"}``.
- legacy R1 (2025-01 to mid 2025): models ``deepseek-r1*`` and ``deepseek-reasoner-r1``.
  ``reasoning_content`` in the input is forbidden (D7); successive user or assistant messages
  and a first non-system message that is not a user message are rejected (D8 and its sibling
  wording from the same era); D4 does not apply.

Texts not in the catalog: an empty ``messages`` array gets ``Messages must not be empty``
(invented; the proxy itself never forwards one); an unparsable body gets axum's ``Failed to
parse the request body as JSON: expected value at line L column C`` (the serde detail is
approximated).
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator.common import Rejection, deepseek_rejection, nonempty_list
from proxy.emulator.deepseek_schema import check_message, fail
from proxy.emulator.serde import PARSE, Locator, unexpected

_R1 = re.compile(r"deepseek-(?:reasoner-)?r1\b")
_D1 = "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
_D2 = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to "
    "each 'tool_call_id'. (insufficient tool messages following tool_calls message)"
)
_D4 = "The `reasoning_content` in the thinking mode must be passed back to the API."
_D7 = (
    "The reasoning_content is an intermediate result for display purposes only and will not "
    "be included in the context for inference. Please remove the reasoning_content from your "
    "message to reduce network traffic."
)
_D12 = "Invalid assistant message: content or tool_calls must be set"
_FIRST_USER = (
    "The first message (except the system message) of deepseek-reasoner must be a user "
    "message, but an assistant message detected."
)


def not_json(line: int, column: int) -> Rejection:
    """DeepSeek's answer to a body that does not parse as JSON."""
    text = f"{PARSE}expected value at line {line} column {column}"
    return deepseek_rejection("D-json", text)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error DeepSeek reports for this request body, or None when it is accepted."""
    loc = Locator(raw, body)
    if not isinstance(body, dict):
        text = f"invalid type: {unexpected(body)}, expected struct ChatCompletionRequest"
        return fail("D-json", text, loc.at(peek=True))
    if "messages" not in body:
        return fail("D-schema", "missing field `messages`", loc.at())
    messages = body["messages"]
    if not isinstance(messages, list):
        text = f"messages: invalid type: {unexpected(messages)}, expected a sequence"
        return fail("D-schema", text, loc.at("messages", peek=True))
    for i, msg in enumerate(messages):
        found = check_message(msg, i, loc)
        if found is not None:
            return found
    if not messages:
        return deepseek_rejection("D-schema", "Messages must not be empty")
    return _walk(messages, thinking_mode(body))


def thinking_mode(body: dict[str, Any]) -> str:
    """``r1``, ``thinking`` or ``plain``: which model-dependent rules apply."""
    model = body.get("model")
    model = model if isinstance(model, str) else ""
    if _R1.match(model):
        return "r1"
    thinking = body.get("thinking")
    switch = thinking.get("type") if isinstance(thinking, dict) else None
    if switch in ("enabled", "disabled"):
        return "thinking" if switch == "enabled" else "plain"
    default_on = model == "deepseek-reasoner" or model.startswith("deepseek-v4")
    return "thinking" if default_on else "plain"


def _walk(messages: list[dict[str, Any]], mode: str) -> Rejection | None:
    pending: list[str] | None = None  # ids of the open tool_calls block still unanswered
    first = next((k for k, m in enumerate(messages) if m["role"] != "system"), -1)
    for i, msg in enumerate(messages):
        found = _r1_rules(messages, i, first) if mode == "r1" else None
        found = found or _assistant_rules(msg, mode == "thinking")
        if found is not None:
            return found
        if msg["role"] == "tool":
            if pending is None or msg["tool_call_id"] not in pending:
                return deepseek_rejection("D1", _D1)
            pending.remove(msg["tool_call_id"])
            continue
        if pending:
            return deepseek_rejection("D2", _D2)
        pending = _call_ids(msg)
    return deepseek_rejection("D2", _D2) if pending else None


def _call_ids(msg: dict[str, Any]) -> list[str] | None:
    calls = msg.get("tool_calls") if msg["role"] == "assistant" else None
    return [call["id"] for call in calls] if nonempty_list(calls) else None


def _assistant_rules(msg: dict[str, Any], thinking: bool) -> Rejection | None:
    if msg["role"] != "assistant":
        return None
    has_calls = nonempty_list(msg.get("tool_calls"))
    if msg.get("content") is None and not has_calls:
        return deepseek_rejection("D12", _D12)
    if thinking and has_calls and not isinstance(msg.get("reasoning_content"), str):
        return deepseek_rejection("D4", _D4)
    return None


def _r1_rules(messages: list[dict[str, Any]], i: int, first: int) -> Rejection | None:
    """D7 and D8 of the R1 era; `first` is the index of the first non-system message."""
    msg, role = messages[i], messages[i]["role"]
    if role == "assistant" and msg.get("reasoning_content") is not None:
        return deepseek_rejection("D7", _D7)
    if role == "assistant" and i == first:
        return deepseek_rejection("D8", _FIRST_USER)
    if i > 0 and role in ("user", "assistant") and messages[i - 1]["role"] == role:
        text = (
            f"deepseek-reasoner does not support successive user or assistant messages "
            f"(messages[{i - 1}] and messages[{i}] in your input). You should interleave the "
            "user/assistant messages in the message sequence."
        )
        return deepseek_rejection("D8", text)
    return None
