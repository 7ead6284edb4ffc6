"""Items of chat completions (``messages``) and of the Responses API (``input``)."""

from __future__ import annotations

from typing import Any

from proxy.core.views import ItemView, dicts, text, view_of


def _parts_text(value: Any) -> str:
    if type(value) is str:
        return value
    return "".join(text(p.get("text")) for p in dicts(value))


def chat_view(item: Any) -> ItemView:
    """A chat message: its role, the ids of its ``tool_calls`` (or the ``tool_call_id`` it
    answers), the functions it calls, its content."""
    if type(item) is not dict:
        return view_of("?")
    calls = dicts(item.get("tool_calls"))
    ids = [text(c.get("id")) for c in calls] + [text(item.get("tool_call_id"))]
    names = [text(f.get("name")) for c in calls if type(f := c.get("function")) is dict]
    return view_of(
        text(item.get("role")), ids=ids, names=names, body=_parts_text(item.get("content"))
    )


def responses_view(item: Any) -> ItemView:
    """A Responses item: its type (a message reads as its role), its ``call_id`` (or the
    approval it answers), the function it calls, its content, output or summary."""
    if type(item) is not dict:
        return view_of("?")
    kind = text(item.get("type"))
    if not kind or kind == "message":
        kind = text(item.get("role")) or kind
    ids = [text(item.get("call_id")), text(item.get("approval_request_id"))]
    body = _parts_text(item.get("content")) or _parts_text(item.get("output"))
    body = body or _parts_text(item.get("summary"))
    names = [text(item.get("name"))] if kind.endswith("_call") else []
    return view_of(kind, ids=ids, names=[n for n in names if n], body=body)
