"""The first pairing rule: one call id open twice at once (see :mod:`.blocks` for the terms).

It runs before the other pairing rules (:mod:`.pairing`), so that they see every open call
under an id of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from heapq import merge

from proxy.core.chat.messages import History, call_id, stable_id
from proxy.core.chat.rules import views
from proxy.core.chat.rules.blocks import calls_of, result_id, well_paired
from proxy.core.chat.rules.rebuild import rebind
from proxy.core.rule import Hit, Params, rule

# --- duplicate_tool_call_id --------------------------------------------------------------------


@rule(
    tools_only=True,
    hint="Give every tool call its own id, unique across the whole history.",
)
def duplicate_tool_call_id(history: History, params: Params) -> list[Hit]:
    """Two calls with one id open at the same time, so that their results would be ambiguous.

    Open at once: both in one assistant message, or the second made before the first was
    answered. Providers pair results with calls by id: OpenAI answers ``Duplicate value for
    'tool_call_id'`` (O4, agno#5116), Mistral counts calls against responses (3230). An id
    reused in a later turn after its first call was answered is no hit: pydantic-ai and
    LiteLLM replay such histories, Kimi's native ids repeat across rounds by design
    (``search_web:0``, B1), and no upstream was seen refusing them. The ``rename`` repair
    gives every later duplicate a stable id derived from the original id and its position, and
    rebinds results in order: a tool message answering the duplicated id binds to the nearest
    preceding call with that id not answered yet (the first such call when one message holds
    several).
    """
    if well_paired(history) or _unique(history):
        return []
    messages = history.messages
    hits = []
    waiting: dict[str, list[int]] = {}  # id -> positions of its calls not answered yet
    for i in merge(history.index.callers, history.index.tools):
        if messages[i]["role"] == "tool":
            open_calls = waiting.get(result_id(messages[i]) or "")
            if open_calls:
                open_calls.pop()
            continue
        for j, call in enumerate(calls_of(messages[i]) or ()):
            cid = call_id(call)
            if cid is None:
                continue
            open_calls = waiting.setdefault(cid, [])
            if open_calls:
                detail = f"tool call id {cid!r} is already used in {history.path(open_calls[0])}"
                detail += ", whose call is not answered yet"
                hits.append(Hit(i, f".tool_calls[{j}].id", detail, data=(j, cid)))
            open_calls.append(i)
    return hits


def _unique(history: History) -> bool:
    """Whether every call has a string id no other call has (then none is ever open twice):
    the usual broken history, whose break is elsewhere, skips the walk over its calls."""
    ids = views.string_ids(history)
    return ids is not None and len(set(ids)) == len(ids)


def _calls(history: History) -> list[tuple[int, int, str]]:
    """``(position, index in tool_calls, id)`` of every call with an id, in history order."""
    found = []
    for c in history.index.callers:
        for j, call in enumerate(calls_of(history.messages[c]) or ()):
            cid = call_id(call)
            if cid is not None:
                found.append((c, j, cid))
    return found


@duplicate_tool_call_id.repair("rename")
def _rename(history: History, hits: Sequence[Hit], params: Params) -> History:
    messages = history.messages
    taken: set[str | None] = {cid for _, _, cid in _calls(history)}
    taken.update(result_id(messages[t]) for t in history.index.tools)
    fresh = {}
    for hit in hits:
        j, cid = hit.data
        new_id, salt = stable_id(cid, history.origin(hit.index), j), 0
        while new_id in taken:  # a hash collision with an id in use: astronomically rare
            salt += 1
            new_id = stable_id(cid, history.origin(hit.index), j, salt)
        taken.add(new_id)
        fresh[hit.index, j] = new_id
    return history.replace(rebind(history, fresh, {hit.data[1] for hit in hits}))
