"""Chat completions and the Responses API in the GenAI conventions (:mod:`proxy.core.genai`)."""

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
    system_text,
    text_part,
)


def _chat_parts(message: dict[str, Any]) -> list[Part]:
    parts: list[Part] = []
    reasoning = message.get("reasoning_content")
    if type(reasoning) is str and reasoning:
        parts.append({"type": "reasoning", "content": reasoning})
    content = message.get("content")
    if message.get("role") == "tool":
        return [response_part(message.get("tool_call_id"), content)]
    if type(content) is str:
        parts.append(text_part(content))
    for block in dicts(content):
        text = block.get("text")
        parts.append(text_part(text) if type(text) is str else other_part(block))
    for call in dicts(message.get("tool_calls")):
        function = call.get("function")
        function = function if type(function) is dict else {}
        parts.append(call_part(call.get("id"), function.get("name"), function.get("arguments")))
    return parts


def _chat_input(items: list[Any]) -> list[Message]:
    return [{"role": m.get("role"), "parts": _chat_parts(m)} for m in dicts(items)]


_CHAT_FINISH = {"tool_calls": "tool_call", "function_call": "tool_call"}


def _chat_output(answer: dict[str, Any]) -> list[Message]:
    out = []
    for choice in dicts(answer.get("choices")):
        message = choice.get("message")
        message = message if type(message) is dict else {}
        out.append(
            {
                "role": message.get("role") or "assistant",
                "parts": _chat_parts(message),
                "finish_reason": finish(choice.get("finish_reason"), _CHAT_FINISH),
            }
        )
    return out


def _responses_item(item: dict[str, Any]) -> tuple[str, list[Part]]:
    """An input or output item: the role it speaks with, its parts."""
    kind = item.get("type", "message")
    if kind == "message":
        content = item.get("content")
        if type(content) is str:
            return item.get("role", "user"), [text_part(content)]
        parts = []
        for block in dicts(content):
            text = block.get("text")
            parts.append(text_part(text) if type(text) is str else other_part(block))
        return item.get("role", "user"), parts
    if kind == "function_call":
        return "assistant", [
            call_part(item.get("call_id"), item.get("name"), item.get("arguments"))
        ]
    if kind == "function_call_output":
        return "tool", [response_part(item.get("call_id"), item.get("output"))]
    if kind == "reasoning":
        texts = [s.get("text") for s in dicts(item.get("summary"))]
        return "assistant", [
            {"type": "reasoning", "content": t} for t in texts if type(t) is str and t
        ]
    return "assistant" if str(kind).endswith("_call") else "user", [other_part(item)]


def _responses_input(items: list[Any]) -> list[Message]:
    out = []
    for item in items:
        if type(item) is str:
            out.append({"role": "user", "parts": [text_part(item)]})
        elif type(item) is dict:
            role, parts = _responses_item(item)
            out.append({"role": role, "parts": parts})
    return out


_RESPONSES_FINISH = {"completed": "stop", "max_output_tokens": "length"}


def _responses_output(answer: dict[str, Any]) -> list[Message]:
    parts = [p for item in dicts(answer.get("output")) for p in _responses_item(item)[1]]
    reason = answer.get("status")
    details = answer.get("incomplete_details")
    if type(details) is dict:
        reason = details.get("reason", reason)
    if reason == "completed" and any(p["type"] == "tool_call" for p in parts):
        reason = "tool_call"
    return [
        {"role": "assistant", "parts": parts, "finish_reason": finish(reason, _RESPONSES_FINISH)}
    ]


CHAT = Converter(_chat_input, _chat_output, system_text)
RESPONSES = Converter(_responses_input, _responses_output, system_text)
