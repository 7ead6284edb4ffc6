"""What an emulated Messages answer quotes: the trailing tool results, or the question.

The question is the last user text that is not a system reminder. Claude Code wraps what it
injects in ``<system-reminder>`` tags (its context, the agent types of its ``Agent`` tool) and
puts those blocks before and after the prompt, in the prompt's message or a message of their
own; ``claude -p "Say hello"`` must be answered to "Say hello".
"""

from __future__ import annotations

import re
from typing import Any

#: A system reminder, closed or running to the end of its text block.
REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)


def tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of a message."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    return [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]


def text_of(content: Any) -> str:
    """The text of a message's content (string, or its text blocks joined)."""
    return " ".join(_texts(content))


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    blocks = content if isinstance(content, list) else []
    texts = [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return [t for t in texts if isinstance(t, str)]


def question(messages: list[dict[str, Any]]) -> str:
    """The last user text that is not a system reminder ("" when there is none)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        for text in reversed(_texts(message.get("content"))):
            asked = REMINDER.sub("", text).strip()
            if asked:
                return asked
    return ""


def answer_text(provider: str, messages: list[dict[str, Any]]) -> str:
    """The text answer: the trailing tool results quoted, else the question's start echoed."""
    last = messages[-1]
    results = tool_results(last) if last.get("role") == "user" else []
    if results:
        quoted = [_result_text(r.get("content"))[:200] for r in results]
        return "The tool returned: " + " | ".join(quoted)
    return f"Emulated {provider} answer to: {question(messages)[:80]}"


def _result_text(content: Any) -> str:
    return content if isinstance(content, str) else text_of(content)
