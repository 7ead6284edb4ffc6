"""Anthropic Messages in the GenAI conventions (:mod:`proxy.core.genai`)."""

from __future__ import annotations

from typing import Any

from proxy.core.genai import (
    Converter,
    Message,
    Part,
    call_part,
    dicts,
    finish,
    other_part,
    response_part,
    text_part,
)


def _messages_parts(content: Any) -> list[Part]:
    if type(content) is str:
        return [text_part(content)]
    parts: list[Part] = []
    for block in dicts(content):
        kind = block.get("type")
        if kind == "text" and type(block.get("text")) is str:
            parts.append(text_part(block["text"]))
        elif kind == "tool_use":
            parts.append(call_part(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            parts.append(response_part(block.get("tool_use_id"), block.get("content")))
        elif kind == "thinking" and type(block.get("thinking")) is str:
            parts.append({"type": "reasoning", "content": block["thinking"]})
        else:
            parts.append(other_part(block))
    return parts


def _messages_input(items: list[Any]) -> list[Message]:
    return [
        {"role": m.get("role"), "parts": _messages_parts(m.get("content"))} for m in dicts(items)
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
            "finish_reason": finish(answer.get("stop_reason"), _MESSAGES_FINISH),
        }
    ]


MESSAGES = Converter(_messages_input, _messages_output, _messages_parts)
