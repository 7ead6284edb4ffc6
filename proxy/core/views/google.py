"""Contents of Gemini's native API (``contents``: a role and parts, gemini-native.md §1.2)."""

from __future__ import annotations

import json
from typing import Any

from proxy.core.views import ItemView, dicts, text, view_of

#: The data field of a part, both spellings, as the viewer names it.
_KINDS = (
    ("functionCall", "function_call"),
    ("functionResponse", "function_response"),
    ("inlineData", "inline_data"),
    ("fileData", "file_data"),
    ("executableCode", "executable_code"),
    ("codeExecutionResult", "code_execution_result"),
    ("toolCall", "tool_call"),
    ("toolResponse", "tool_response"),
)


def _part_kind(part: dict[str, Any]) -> str:
    for camel, snake in _KINDS:
        if camel in part or snake in part:
            return camel
    if part.get("thought") is True:
        return "thought"
    return "text" if "text" in part else "?"


def _field(part: dict[str, Any], camel: str, snake: str) -> dict[str, Any]:
    value = part.get(camel, part.get(snake))
    return value if type(value) is dict else {}


def content_view(item: Any) -> ItemView:
    """A content: its role, its parts' kinds (``functionCall``, ``thought``…, a part carrying
    a signature marked ``+signature``), the ids of its calls and responses, the functions it
    calls, its text (a response's output shown as JSON)."""
    if type(item) is not dict:
        return view_of("?")
    parts = dicts(item.get("parts"))
    tags, ids, names, texts = [], [], [], []
    for part in parts:
        kind = _part_kind(part)
        signed = "thoughtSignature" in part or "thought_signature" in part
        tags.append(kind + ("+signature" if signed else ""))
        call = _field(part, "functionCall", "function_call")
        answer = _field(part, "functionResponse", "function_response")
        ids += [text(call.get("id")), text(answer.get("id"))]
        if call:
            names.append(text(call.get("name")))
        if answer and "response" in answer:
            texts.append(json.dumps(answer["response"], ensure_ascii=False)[:2000])
        texts.append(text(part.get("text")))
    return view_of(text(item.get("role")), tags=tags, ids=ids, names=names, body="".join(texts))
