"""Rules about ``tool_use`` ids: the upstream's id pattern, and ids used twice."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

from proxy.core.messages import index as fast
from proxy.core.messages.index import Index, index_of
from proxy.core.messages.items import Block, Messages, blocks
from proxy.core.messages.rules.common import facts, rule, turns, with_content
from proxy.core.rule import Hit, Params

_BAD = re.compile(r"[^a-zA-Z0-9_-]")
#: The id key of each block type whose id the upstream's pattern constrains.
_ID_KEYS = {"tool_use": "id", "tool_result": "tool_use_id"}
_ID_TYPES = frozenset(_ID_KEYS)


def _digest(value: str) -> str:
    return hashlib.blake2b(value.encode(), digest_size=4).hexdigest()


@rule(
    tools_only=True,
    hint="Use tool_use ids of letters, digits, '_' and '-' only.",
)
def messages_tool_use_id_format(history: Messages, params: Params) -> list[Hit]:
    """A ``tool_use`` id (or a ``tool_result``'s ``tool_use_id``) outside the upstream's pattern.

    Anthropic answers ``messages.{i}.content.{j}.tool_use.id: String should match pattern
    '^[a-zA-Z0-9_-]+$'`` to ids minted elsewhere (Kimi's ``functions.Bash:0``, MCP names)
    (anthropic-messages.md M7; ClawRouter#17, forgecode#1142, claude-code-hub#470). The
    ``remap`` repair replaces each other character by ``_`` (plus a short hash of the
    original on a collision), the same map for calls and results (LangChain's
    tool_id_sanitization middleware), so pairs stay pairs and the same history always gets
    the same ids.
    """
    pattern = facts(params).tool_use_id_pattern
    if not pattern:
        return []
    index = index_of(history)
    if fast.FAST and _all_match(pattern, index):
        return []
    match = re.compile(pattern).fullmatch
    hits = []
    for i, j, block in index.of_any(_ID_TYPES):
        key = _ID_KEYS[block["type"]]
        if not match(block[key]):
            detail = f"id {block[key]!r} does not match the upstream's pattern"
            hits.append(Hit(i, f".content[{j}].{key}", detail, (j, key)))
    return hits


#: A pattern of one character class repeated (``[a-zA-Z0-9_-]+``): no escape, not negated.
_ONE_CLASS = re.compile(r"\[[^\]\\^][^\]\\]*\]\+")


def _all_match(pattern: str, index: Index) -> bool:
    """Whether every id of the history matches ``pattern`` (each distinct id once: results
    answering the calls in order repeat their ids, read once). A pattern of one class
    ``[C]+`` matches every id when none is empty and their concatenation is all ``C``: one
    match instead of one per id."""
    ids = index.values("tool_use", "id")
    if not index.answered_in_order():
        ids = ids + index.values("tool_result", "tool_use_id")
    joined = _joined(pattern)
    if joined is not None:
        return "" not in ids and joined.fullmatch("".join(ids)) is not None
    match = re.compile(pattern).fullmatch
    return all(match(x) for x in set(ids))


@lru_cache(maxsize=16)
def _joined(pattern: str) -> re.Pattern[str] | None:
    """For a pattern of one class ``[C]+``, the compiled ``[C]*`` that matches the ids
    joined (made once per pattern: a policy has one)."""
    return re.compile(f"{pattern[:-1]}*") if _ONE_CLASS.fullmatch(pattern) else None


@messages_tool_use_id_format.repair("remap")
def _remap(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    taken = {b.get("id") for _, _, b in index_of(history).of("tool_use")}
    mapping: dict[str, str] = {}
    for hit in hits:
        j, key = hit.data
        old = blocks(history.messages[hit.index])[j][key]
        if old not in mapping:
            new = _BAD.sub("_", old) or "id"
            if new in taken or new in mapping.values():
                new = f"{new}_{_digest(old)}"
            mapping[old] = new
    changes: dict[int, dict[str, object]] = {}
    for hit in hits:
        j, key = hit.data
        message = changes.get(hit.index, history.messages[hit.index])
        content = list(blocks(message))
        content[j] = {**content[j], key: mapping[content[j][key]]}
        changes[hit.index] = with_content(message, content)
    return history.replace(changes)


@rule(
    tools_only=True,
    hint="Give every tool_use its own id.",
)
def messages_duplicate_tool_use_id(history: Messages, params: Params) -> list[Hit]:
    """Two ``tool_use`` blocks with one id (in the whole request on Anthropic, in one message
    elsewhere).

    Anthropic answers ``messages.{i}.content.{j}: `tool_use` ids must be unique``
    (anthropic-messages.md M5, trycua/cua#524 via LiteLLM); Kimi's ``name:N`` ids repeat across
    rounds. The ``rename`` repair gives the later call a derived id (``<id>_<hash>``) and the
    same to the result answering it in the next turn.
    """
    whole = facts(params).ids_unique_per_request
    index = index_of(history)
    if fast.FAST and index.ids_unique():
        return []  # unique in the request, so in each message too
    calls = index.of("tool_use")
    seen: dict[object, int] = {}
    hits = []
    for i, j, block in calls:
        key = block["id"] if whole else (i, block["id"])
        count = seen.get(key, 0)
        seen[key] = count + 1
        if count:
            hits.append(
                Hit(i, f".content[{j}].id", f"tool_use id {block['id']!r} used before", (j, count))
            )
    return hits


@messages_duplicate_tool_use_id.repair("rename")
def _rename(history: Messages, hits: Sequence[Hit], params: Params) -> Messages:
    merges = facts(params).merges_same_role
    ts = turns(history, merges)
    turn_of = {i: t for t, turn in enumerate(ts) for i in turn.members}
    changes: dict[int, dict[str, object]] = {}
    claimed: set[tuple[int, int]] = set()
    for hit in hits:
        j, count = hit.data
        old = blocks(history.messages[hit.index])[j]["id"]
        new = f"{old}_{_digest(f'{old}:{hit.index}:{j}:{count}')}"
        _set(history, changes, (hit.index, j), "id", new)
        nxt = turn_of[hit.index] + 1
        if nxt < len(ts) and ts[nxt].role == "user":
            _answer(history, changes, ts[nxt].members, (old, new), claimed)
    return history.replace(changes)


def _answer(
    history: Messages,
    changes: dict[int, dict[str, object]],
    members: tuple[int, ...],
    rename: tuple[str, str],
    claimed: set[tuple[int, int]],
) -> None:
    """Rename the result answering the renamed call in the next turn: the second unclaimed
    result with the old id (the first answers the first call), else the only one."""
    old, new = rename
    found = [
        (i, j)
        for i in members
        for j, b in enumerate(blocks(history.messages[i]))
        if b["type"] == "tool_result" and b["tool_use_id"] == old and (i, j) not in claimed
    ]
    if len(found) > 1:
        found = found[1:]  # the first answers the first call with this id
    if found:
        i, j = found[0]
        claimed.add((i, j))
        _set(history, changes, (i, j), "tool_use_id", new)


def _set(
    history: Messages,
    changes: dict[int, dict[str, object]],
    place: tuple[int, int],
    key: str,
    value: str,
) -> None:
    i, j = place
    message = changes.get(i, history.messages[i])
    content: list[Block] = list(blocks(message))
    content[j] = {**content[j], key: value}
    changes[i] = with_content(message, content)


RULES = (messages_tool_use_id_format, messages_duplicate_tool_use_id)
