"""Contents as text: what a salvaged result or a merged turn says, and when a content is empty.

Shared by the pairing repairs (a tool result turned user text, :mod:`.rebuild`) and the turn
rules (successive messages joined, :mod:`.sequence`); pure.
"""

from __future__ import annotations

import json
from typing import Any


def as_text(content: Any) -> str:
    """``content`` as text for a user message: strings as they are, anything else as JSON."""
    if type(content) is str:
        return content
    if type(content) is list and content and all(_is_text_part(p) for p in content):
        return "\n".join(p["text"] for p in content)
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=repr)


def _is_text_part(part: Any) -> bool:
    return type(part) is dict and part.get("type") == "text" and type(part.get("text")) is str


def is_empty(content: Any) -> bool:
    """Missing, null, ``""`` or ``[]`` content."""
    return content is None or content in ("", [])


def join_contents(first: Any, second: Any, separator: str) -> Any:
    """Two message contents as one: strings joined, parts lists concatenated; empties skipped."""
    if is_empty(first):
        return second
    if is_empty(second):
        return first
    if type(first) is list or type(second) is list:
        return [*_parts(first), *_parts(second)]
    return f"{_plain(first)}{separator}{_plain(second)}"


def _parts(content: Any) -> list[Any]:
    if type(content) is list:
        return content
    return [{"type": "text", "text": _plain(content)}]


def _plain(content: Any) -> str:
    return content if type(content) is str else as_text(content)
