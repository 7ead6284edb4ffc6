"""Building new histories for the pairing repairs, and the messages they add.

Every function here is pure and returns new messages or a new :class:`History`; positions are
those of the history passed in, and every kept or moved message keeps its origin so that
findings still name the index the client sent.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from heapq import merge
from typing import Any

from proxy.core.chat.messages import History, Message, call_id
from proxy.core.chat.rules.blocks import block_end, calls_of, result_id
from proxy.core.chat.rules.text import as_text
from proxy.core.providers import Provider
from proxy.core.rule import Hit

Entries = list[tuple[Message, int | None]]  # (message, its position, None if new)

SALVAGE_TEXT = (
    "[toolcall-guard] Result of tool call {id} ({name}), whose call is missing from the "
    "history:\n{content}"
)
MISSING_TEXT = "No result was recorded for this tool call."


def insert_after(history: History, inserts: dict[int, Entries], skip: set[int]) -> History:
    """Rebuild without the ``skip`` positions, adding ``inserts[i]`` right after position i."""
    return history.edited(inserts, skip)


def tool_runs(history: History, hits: Sequence[Hit]) -> dict[int, list[int]]:
    """Hit positions grouped by the end of the tool run they sit in (hits are in order)."""
    runs: dict[int, list[int]] = {}
    end = -1
    for hit in hits:
        if hit.index > end:
            end = block_end(history.messages, hit.index)
        runs.setdefault(end, []).append(hit.index)
    return runs


_FIELD = re.compile(r"\{(id|name|content)\}")


def _fill(template: str, values: dict[str, str]) -> str:
    # Only the three known fields are filled, in one pass: content may contain braces.
    return _FIELD.sub(lambda m: values[m.group(1)], template)


def salvage_message(history: History, orphans: list[int], template: str) -> Entries:
    """One user message with the text of the ``orphans`` tool messages, per ``template``."""
    texts = []
    for t in orphans:
        message = history.messages[t]
        rid, name = message.get("tool_call_id"), message.get("name")
        values = {
            "id": "(no id)" if rid is None or rid == "" else as_text(rid),
            "name": name if type(name) is str and name else "unknown tool",
            "content": as_text(message.get("content")),
        }
        texts.append(_fill(template, values))
    return [({"role": "user", "content": "\n\n".join(texts)}, None)]


def call_message(calls: list[Any], provider: Provider) -> Message:
    """An assistant message making ``calls`` and saying nothing, as the upstream takes it."""
    # Null where the record allows it on tool-call turns (OpenAI O14, DeepSeek D12), the key
    # left out where only that is allowed (Gemini G9, G10), else "": content_null's choices,
    # so no later rule has to touch the new message.
    keep, content = provider.new_call_content()
    if not keep:
        return {"role": "assistant", "tool_calls": calls}
    return {"role": "assistant", "content": content, "tool_calls": calls}


def rebind(
    history: History, fresh: dict[tuple[int, int], str], dups: set[str]
) -> dict[int, Message]:
    """Renamed calls, and results bound to the nearest earlier unanswered call of their id."""
    messages = history.messages
    pending: dict[str, list[deque[str]]] = {}  # id -> per message, its calls not answered yet
    changes: dict[int, Message] = {}
    for i in merge(history.index.callers, history.index.tools):
        message = messages[i]
        if message["role"] == "tool":
            bound = _take(pending, result_id(message))
            if bound is not None and bound != message["tool_call_id"]:
                changes[i] = {**message, "tool_call_id": bound}
            continue
        calls = calls_of(message)
        if calls is None:
            continue
        waiting: dict[str, deque[str]] = {}
        for j, call in enumerate(calls):
            cid = call_id(call)
            if cid is not None and cid in dups:
                waiting.setdefault(cid, deque()).append(fresh.get((i, j), cid))
        for cid, group in waiting.items():
            pending.setdefault(cid, []).append(group)
        if any((i, j) in fresh for j in range(len(calls))):
            renamed = [_fresh_call(call, fresh.get((i, j))) for j, call in enumerate(calls)]
            changes[i] = {**message, "tool_calls": renamed}
    return changes


def _fresh_call(call: Any, new_id: str | None) -> Any:
    return call if new_id is None else {**call, "id": new_id}


def _take(pending: dict[str, list[deque[str]]], rid: str | None) -> str | None:
    """The id of the nearest earlier call of ``rid`` not answered yet, now answered."""
    groups = pending.get(rid) if rid is not None else None
    while groups and not groups[-1]:
        groups.pop()
    return groups[-1].popleft() if groups else None
