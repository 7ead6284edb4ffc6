"""Items of Anthropic Messages (``messages`` whose content is a list of blocks)."""

from __future__ import annotations

from typing import Any

from proxy.core.views import ItemView, dicts, text, view_of

_USES = frozenset({"tool_use", "server_tool_use"})


def _block_text(block: dict[str, Any]) -> str:
    for key in ("text", "thinking"):
        if type(value := block.get(key)) is str:
            return value
    content = block.get("content") if block.get("type") == "tool_result" else None
    return content if type(content) is str else "".join(_block_text(b) for b in dicts(content))


def messages_view(item: Any) -> ItemView:
    """A message: its role, its blocks' types, the ``tool_use`` ids it makes or the
    ``tool_use_id`` s it answers, the tools it calls, its text."""
    if type(item) is not dict:
        return view_of("?")
    content = item.get("content")
    blocks = dicts(content)
    ids = [
        text(b.get("tool_use_id")) or (text(b.get("id")) if b.get("type") in _USES else "")
        for b in blocks
    ]
    names = [text(b.get("name")) for b in blocks if b.get("type") in _USES]
    body = content if type(content) is str else "".join(_block_text(b) for b in blocks)
    return view_of(
        text(item.get("role")),
        tags=[text(b.get("type")) for b in blocks],
        ids=ids,
        names=names,
        body=body,
    )
