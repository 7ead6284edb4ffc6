"""Message content in the GenAI conventions' schema, one converter per wire API (rows keyed by
the wire's name): what ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
``gen_ai.output.messages`` hold when content capture is on (:mod:`proxy.telemetry.spans`).

The schema (open-telemetry/semantic-conventions, ``docs/gen-ai/gen-ai-input-messages.json``,
``gen-ai-output-messages.json``, ``gen-ai-system-instructions.json``; status Development):
a message is ``{"role", "parts"}``, an output message adds ``finish_reason``; a part is
``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}``,
``{"type": "tool_call_response", "id", "response"}``, ``{"type": "reasoning", "content"}``,
or any other ``{"type": …}`` (a generic part: an image, a file, a server tool's block, named
by its own type, its data left out). System instructions are a list of parts. Finish reasons
are ``stop``, ``length``, ``content_filter``, ``tool_call``, ``error`` where the API's reason
is one of those; any other is kept as the API wrote it.

Pure; every value read defensively (a body is the client's to write); nothing is made up: a
field the API did not send is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import orjson

Part = dict[str, Any]
Message = dict[str, Any]


def _text(content: str) -> Part:
    return {"type": "text", "content": content}


def _call(call_id: Any, name: Any, arguments: Any) -> Part:
    part: Part = {"type": "tool_call", "name": name if type(name) is str else ""}
    if type(call_id) is str:
        part["id"] = call_id
    if arguments is not None:
        part["arguments"] = _arguments(arguments)
    return part


def _response(call_id: Any, response: Any) -> Part:
    part: Part = {"type": "tool_call_response", "response": response}
    if type(call_id) is str:
        part["id"] = call_id
    return part


def _arguments(arguments: Any) -> Any:
    """Arguments as JSON where a string holds a JSON object (chat's, Responses'), else as sent."""
    if type(arguments) is str and arguments.startswith("{"):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if type(v) is dict] if type(value) is list else []


def _other(block: dict[str, Any]) -> Part:
    kind = block.get("type")
    return {"type": kind if type(kind) is str and kind else "unknown"}


def _finish(reason: Any, names: dict[str, str]) -> str:
    return names.get(reason, reason) if type(reason) is str else ""


# --- chat completions ---------------------------------------------------------------------


def _chat_parts(message: dict[str, Any]) -> list[Part]:
    parts: list[Part] = []
    reasoning = message.get("reasoning_content")
    if type(reasoning) is str and reasoning:
        parts.append({"type": "reasoning", "content": reasoning})
    content = message.get("content")
    if message.get("role") == "tool":
        return [_response(message.get("tool_call_id"), content)]
    if type(content) is str:
        parts.append(_text(content))
    for block in _dicts(content):
        text = block.get("text")
        parts.append(_text(text) if type(text) is str else _other(block))
    for call in _dicts(message.get("tool_calls")):
        function = call.get("function")
        function = function if type(function) is dict else {}
        parts.append(_call(call.get("id"), function.get("name"), function.get("arguments")))
    return parts


def _chat_input(items: list[Any]) -> list[Message]:
    return [{"role": m.get("role"), "parts": _chat_parts(m)} for m in _dicts(items)]


_CHAT_FINISH = {"tool_calls": "tool_call", "function_call": "tool_call"}


def _chat_output(answer: dict[str, Any]) -> list[Message]:
    out = []
    for choice in _dicts(answer.get("choices")):
        message = choice.get("message")
        message = message if type(message) is dict else {}
        out.append(
            {
                "role": message.get("role") or "assistant",
                "parts": _chat_parts(message),
                "finish_reason": _finish(choice.get("finish_reason"), _CHAT_FINISH),
            }
        )
    return out


# --- Responses ----------------------------------------------------------------------------


def _responses_item(item: dict[str, Any]) -> tuple[str, list[Part]]:
    """An input or output item: the role it speaks with, its parts."""
    kind = item.get("type", "message")
    if kind == "message":
        content = item.get("content")
        if type(content) is str:
            return item.get("role", "user"), [_text(content)]
        parts = []
        for block in _dicts(content):
            text = block.get("text")
            parts.append(_text(text) if type(text) is str else _other(block))
        return item.get("role", "user"), parts
    if kind == "function_call":
        return "assistant", [_call(item.get("call_id"), item.get("name"), item.get("arguments"))]
    if kind == "function_call_output":
        return "tool", [_response(item.get("call_id"), item.get("output"))]
    if kind == "reasoning":
        texts = [s.get("text") for s in _dicts(item.get("summary"))]
        return "assistant", [
            {"type": "reasoning", "content": t} for t in texts if type(t) is str and t
        ]
    return "assistant" if str(kind).endswith("_call") else "user", [_other(item)]


def _responses_input(items: list[Any]) -> list[Message]:
    out = []
    for item in items:
        if type(item) is str:
            out.append({"role": "user", "parts": [_text(item)]})
        elif type(item) is dict:
            role, parts = _responses_item(item)
            out.append({"role": role, "parts": parts})
    return out


_RESPONSES_FINISH = {"completed": "stop", "max_output_tokens": "length"}


def _responses_output(answer: dict[str, Any]) -> list[Message]:
    parts = [p for item in _dicts(answer.get("output")) for p in _responses_item(item)[1]]
    reason = answer.get("status")
    details = answer.get("incomplete_details")
    if type(details) is dict:
        reason = details.get("reason", reason)
    if reason == "completed" and any(p["type"] == "tool_call" for p in parts):
        reason = "tool_call"
    return [
        {"role": "assistant", "parts": parts, "finish_reason": _finish(reason, _RESPONSES_FINISH)}
    ]


# --- Anthropic Messages -------------------------------------------------------------------


def _messages_parts(content: Any) -> list[Part]:
    if type(content) is str:
        return [_text(content)]
    parts: list[Part] = []
    for block in _dicts(content):
        kind = block.get("type")
        if kind == "text" and type(block.get("text")) is str:
            parts.append(_text(block["text"]))
        elif kind == "tool_use":
            parts.append(_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            parts.append(_response(block.get("tool_use_id"), block.get("content")))
        elif kind == "thinking" and type(block.get("thinking")) is str:
            parts.append({"type": "reasoning", "content": block["thinking"]})
        else:
            parts.append(_other(block))
    return parts


def _messages_input(items: list[Any]) -> list[Message]:
    return [
        {"role": m.get("role"), "parts": _messages_parts(m.get("content"))} for m in _dicts(items)
    ]


_MESSAGES_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
}


def _messages_output(answer: dict[str, Any]) -> list[Message]:
    return [
        {
            "role": answer.get("role") or "assistant",
            "parts": _messages_parts(answer.get("content")),
            "finish_reason": _finish(answer.get("stop_reason"), _MESSAGES_FINISH),
        }
    ]


# --- Gemini -------------------------------------------------------------------------------


def _gemini_parts(content: Any) -> list[Part]:
    parts: list[Part] = []
    for part in _dicts(content.get("parts") if type(content) is dict else None):
        call, answer = part.get("functionCall"), part.get("functionResponse")
        if type(part.get("text")) is str:
            kind = "reasoning" if part.get("thought") is True else "text"
            parts.append({"type": kind, "content": part["text"]})
        elif type(call) is dict:
            parts.append(_call(call.get("id"), call.get("name"), call.get("args")))
        elif type(answer) is dict:
            parts.append(_response(answer.get("id"), answer.get("response")))
        else:
            named = [k for k in part if k not in ("thought", "thoughtSignature")]
            parts.append({"type": named[0] if named else "unknown"})
    return parts


def _gemini_role(content: dict[str, Any]) -> Any:
    role = content.get("role")
    return "assistant" if role == "model" else role or "user"


def _gemini_input(items: list[Any]) -> list[Message]:
    return [{"role": _gemini_role(c), "parts": _gemini_parts(c)} for c in _dicts(items)]


_GEMINI_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "MALFORMED_FUNCTION_CALL": "error",
}


def _gemini_output(answer: dict[str, Any]) -> list[Message]:
    if "candidates" not in answer and type(answer.get("response")) is dict:
        answer = answer["response"]  # Code Assist wraps the answer
    out = []
    for candidate in _dicts(answer.get("candidates")):
        content = candidate.get("content")
        content = content if type(content) is dict else {}
        out.append(
            {
                "role": "assistant",
                "parts": _gemini_parts(content),
                "finish_reason": _finish(candidate.get("finishReason"), _GEMINI_FINISH),
            }
        )
    return out


# --- system instructions and the rows -----------------------------------------------------


def system_parts(values: list[Any]) -> list[Part]:
    """``gen_ai.system_instructions`` from the values of a body's system keys: a string, a list
    of text blocks (Messages), a content with parts (Gemini)."""
    parts: list[Part] = []
    for value in values:
        if type(value) is str:
            parts.append(_text(value))
        elif type(value) is dict:
            parts += _gemini_parts(value)
        else:
            parts += _messages_parts(value)
    return parts


class Converter(NamedTuple):
    """A wire API's content in the conventions: its history as input messages, its JSON
    answer as output messages."""

    input: Callable[[list[Any]], list[Message]]
    output: Callable[[dict[str, Any]], list[Message]]


#: By wire API name (:attr:`proxy.core.wire.Wire.name`).
CONVERTERS: dict[str, Converter] = {
    "chat": Converter(_chat_input, _chat_output),
    "responses": Converter(_responses_input, _responses_output),
    "messages": Converter(_messages_input, _messages_output),
    "gemini": Converter(_gemini_input, _gemini_output),
}
