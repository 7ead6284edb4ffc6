"""Gemini's native API in the GenAI conventions (:mod:`proxy.core.genai`)."""

from __future__ import annotations

from typing import Any

from proxy.core.genai import (
    Converter,
    Message,
    Part,
    call_part,
    dicts,
    finish,
    response_part,
)


def _gemini_parts(content: Any) -> list[Part]:
    parts: list[Part] = []
    for part in dicts(content.get("parts") if type(content) is dict else None):
        call, answer = part.get("functionCall"), part.get("functionResponse")
        if type(part.get("text")) is str:
            kind = "reasoning" if part.get("thought") is True else "text"
            parts.append({"type": kind, "content": part["text"]})
        elif type(call) is dict:
            parts.append(call_part(call.get("id"), call.get("name"), call.get("args")))
        elif type(answer) is dict:
            parts.append(response_part(answer.get("id"), answer.get("response")))
        else:
            named = [k for k in part if k not in ("thought", "thoughtSignature")]
            parts.append({"type": named[0] if named else "unknown"})
    return parts


def _gemini_role(content: dict[str, Any]) -> Any:
    role = content.get("role")
    return "assistant" if role == "model" else role or "user"


def _gemini_input(items: list[Any]) -> list[Message]:
    return [{"role": _gemini_role(c), "parts": _gemini_parts(c)} for c in dicts(items)]


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
    for candidate in dicts(answer.get("candidates")):
        content = candidate.get("content")
        content = content if type(content) is dict else {}
        out.append(
            {
                "role": "assistant",
                "parts": _gemini_parts(content),
                "finish_reason": finish(candidate.get("finishReason"), _GEMINI_FINISH),
            }
        )
    return out


GEMINI = Converter(_gemini_input, _gemini_output, _gemini_parts)
