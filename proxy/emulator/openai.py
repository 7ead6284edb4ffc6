"""Strict emulation of OpenAI's `/v1/chat/completions` message validation.

Rows implemented (provider-rules.md §1): O1, O2, O3, O4, O5, O7, O8, O10, O11, O12, O13, O14,
O15, O18, O21 and O23 (a trailing assistant ``tool_calls`` message with no results at the very
end of the history is accepted, as reported for Chat Completions).

Order, as OpenAI sees a request: the body must be a JSON object, then ``messages`` must exist,
be an array and be non-empty (O15); then the schema pass over every message in order
(`openai_schema`); only when the whole request is well-typed, one semantic walk in message
order, checking for each message: O21 (role supported by the model), O14 (``content: null``),
O18 (images outside user messages), then the tool-call pairing O1/O3/O4 (tool messages) or O2
(a non-tool message while calls of the open block are still unanswered).

Model switch: O21 rejects ``role: "function"`` for o-series models (``model`` matching ``o<digit>``,
e.g. ``o3``, ``o4-mini``); gpt-4o and the rest accept it.
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator.common import Rejection, nonempty_list, openai_rejection
from proxy.emulator.openai_errors import empty_array, missing, wrong_type
from proxy.emulator.openai_schema import check_message

NOT_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't "
    "using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was "
    "sent was not valid JSON. If you have trouble figuring out how to fix this, please "
    "contact us through our help center at help.openai.com.)"
)
_O_SERIES = re.compile(r"o\d")


def not_json() -> Rejection:
    """OpenAI's answer to a body that is not a JSON object."""
    return openai_rejection("O-json", NOT_JSON)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error OpenAI reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        return not_json()
    if "messages" not in body:
        return missing("messages")
    messages = body["messages"]
    if not isinstance(messages, list):
        return wrong_type("messages", "an array", messages)
    if not messages:
        return empty_array("messages", "O15")
    for i, msg in enumerate(messages):
        found = check_message(msg, i)
        if found is not None:
            return found
    model = body.get("model")
    return _walk(messages, model if isinstance(model, str) else "")


class _Block:
    """The assistant message whose tool calls are being answered, and the answers so far."""

    __slots__ = ("answered", "ids", "index")

    def __init__(self, index: int, calls: list[dict[str, Any]]) -> None:
        self.index = index
        self.ids = list(dict.fromkeys(call["id"] for call in calls))
        self.answered: dict[str, int] = {}

    def unanswered(self) -> list[str]:
        return [call_id for call_id in self.ids if call_id not in self.answered]


def _walk(messages: list[dict[str, Any]], model: str) -> Rejection | None:
    """The semantic pass; every message is schema-valid here."""
    o_series = _O_SERIES.match(model) is not None
    block: _Block | None = None
    for i, msg in enumerate(messages):
        role = msg["role"]
        if role == "function" or type(msg.get("content")) is not str:  # str content: none apply
            found = _role_supported(role, i, o_series) or _content_null(msg, i) or _images(msg, i)
            if found is not None:
                return found
        if role == "tool":
            found = _tool_result(msg, i, block)
            if found is not None:
                return found
        elif block is not None and block.unanswered():
            return _unanswered(block)
        else:
            block = _Block(i, msg["tool_calls"]) if _has_calls(msg) else None
    return None


def _has_calls(msg: dict[str, Any]) -> bool:
    return msg["role"] == "assistant" and nonempty_list(msg.get("tool_calls"))


def _role_supported(role: str, i: int, o_series: bool) -> Rejection | None:
    if role != "function" or not o_series:
        return None
    path = f"messages[{i}].role"
    msg = f"Unsupported value: '{path}' does not support 'function' with this model."
    return openai_rejection("O21", msg, param=path, code="unsupported_value")


def _content_null(msg: dict[str, Any], i: int) -> Rejection | None:
    role = msg["role"]
    if role == "function" or (role == "assistant" and _calls_anything(msg)):
        return None
    if "content" not in msg:  # only assistant messages get here: the schema requires it elsewhere
        return missing(f"messages[{i}].content")
    if msg["content"] is not None:
        return None
    text = "Invalid value for 'content': expected a string, got null."
    return openai_rejection("O14", text, param=f"messages.[{i}].content")


def _calls_anything(msg: dict[str, Any]) -> bool:
    return nonempty_list(msg.get("tool_calls")) or isinstance(msg.get("function_call"), dict)


def _images(msg: dict[str, Any], i: int) -> Rejection | None:
    role, content = msg["role"], msg.get("content")
    if role not in ("assistant", "tool") or not isinstance(content, list):
        return None
    if not any(part["type"] == "image_url" for part in content):
        return None
    text = (
        f"Invalid 'messages[{i}]'. Image URLs are only allowed for messages with role 'user', "
        f"but this message with role '{role}' contains an image URL."
    )
    return openai_rejection("O18", text, param=f"messages[{i}]")


def _tool_result(msg: dict[str, Any], i: int, block: _Block | None) -> Rejection | None:
    if block is None:
        text = (
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
            "message with 'tool_calls'."
        )
        return openai_rejection("O1", text, param=f"messages.[{i}].role")
    call_id = msg["tool_call_id"]
    param = f"messages.[{i}].tool_call_id"
    if call_id in block.answered:
        text = (
            f"Invalid parameter: Duplicate value for 'tool_call_id' of '{call_id}', "
            f"in messages[{block.answered[call_id]}] and messages[{i}]."
        )
        return openai_rejection("O4", text, param=param)
    if call_id not in block.ids:
        text = (
            f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' "
            "of previous message."
        )
        return openai_rejection("O3", text, param=param)
    block.answered[call_id] = i
    return None


def _unanswered(block: _Block) -> Rejection:
    text = (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(block.unanswered())
    )
    return openai_rejection("O2", text, param=f"messages.[{block.index}].role")
