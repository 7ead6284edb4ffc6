"""How ``check`` tells which wire API a saved body is for: each row's ``recognises``. Pure.

A body is *certainly* of an API when it carries something only that API has; a body no row
recognises falls back on the first row whose history key it has
(:func:`proxy.core.wire.wire_of_body`).
"""

from __future__ import annotations

from typing import Any

#: Chat-only signs: roles and fields no other API's messages carry.
_CHAT_ROLES = frozenset({"system", "developer", "tool", "function"})
_CHAT_FIELDS = ("tool_calls", "tool_call_id", "function_call")


def is_chat(body: Any) -> bool:
    if type(body) is not dict or "system" in body or type(body.get("messages")) is not list:
        return False
    return any(
        type(m) is dict and (m.get("role") in _CHAT_ROLES or any(k in m for k in _CHAT_FIELDS))
        for m in body["messages"]
    )


def is_responses(body: Any) -> bool:
    return type(body) is dict and "input" in body and "messages" not in body


#: Content blocks only Anthropic Messages has (anthropic-messages.md §1).
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "document"}
)


def is_messages(body: Any) -> bool:
    """A top-level ``system`` (chat keeps it in a message), or an Anthropic-only block."""
    if type(body) is not dict or type(body.get("messages")) is not list:
        return False
    if "system" in body:
        return True
    return any(
        type(block) is dict and block.get("type") in _ANTHROPIC_BLOCKS
        for message in body["messages"]
        if type(message) is dict and type(message.get("content")) is list
        for block in message["content"]
    )


def is_gemini(body: Any) -> bool:
    """``contents`` (or Code Assist's ``request.contents``): no other API has it."""
    if type(body) is not dict:
        return False
    inner = body.get("request")
    return "contents" in body or (type(inner) is dict and "contents" in inner)
