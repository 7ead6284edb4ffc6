"""What several Messages rules share: the provider's facts, the request's switches, turns.

A *turn* is what the provider validates as one message: Anthropic merges consecutive messages
of one role before validating (anthropic-messages.md §1, the SDK snapshot f59a9391), DeepSeek
does not (M6), so a turn is a run of same-role messages where the provider merges, else one
message. Pairing is read per turn: a ``tool_use`` must be answered in the next turn, its
results first there (M1-M3).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import repeat
from typing import Any, NamedTuple

from proxy.core.messages import index as fast
from proxy.core.messages.facts import MessagesFacts, facts_of
from proxy.core.messages.index import index_of
from proxy.core.messages.items import Block, Item, Messages, as_blocks, blocks
from proxy.core.providers import model_matches, model_of, provider_of
from proxy.core.rule import Params, rule_for

#: How this package's rules are declared (the API is 'messages'; the name, the function's).
rule = rule_for("messages")

TAG = "[toolcall-guard]"


def facts(params: Params) -> MessagesFacts:
    """The Messages facts of the rule's provider."""
    return facts_of(provider_of(params).name)


def thinking_type(request: Mapping[str, Any]) -> str | None:
    """The request's ``thinking.type`` (``enabled``, ``adaptive``, ``disabled``), or None."""
    value = request.get("thinking")
    kind = value.get("type") if type(value) is dict else None
    return kind if type(kind) is str else None


def model_in(history: Messages, globs: tuple[str, ...]) -> bool:
    """Whether the request's model matches one of ``globs``."""
    return bool(globs) and model_matches(model_of(history.request), globs)


class Turn(NamedTuple):
    """Consecutive messages the provider reads as one (their positions, in order); a named
    tuple, the cheapest record to make (one per message of a history that alternates)."""

    role: Any
    members: tuple[int, ...]

    @property
    def first(self) -> int:
        return self.members[0]

    @property
    def last(self) -> int:
        return self.members[-1]


def turns(history: Messages, merges: bool) -> list[Turn]:
    """The turns of the history as a provider that ``merges`` (or not) reads them."""
    return history.memo("turns_merged" if merges else "turns", lambda h: _turns(h, merges))


def _turns(history: Messages, merges: bool) -> list[Turn]:
    roles = history.roles
    if not merges or (fast.FAST and index_of(history).alternates()):
        # A turn per message, made in C (the named tuple's own __new__ is a Python call).
        return list(
            map(tuple.__new__, repeat(Turn), zip(roles, zip(range(len(roles))), strict=True))
        )
    new = tuple.__new__
    n = len(roles)
    # A run of one role (never of system) ends where the role changes or a system one starts.
    starts = [0, *(i for i in range(1, n) if roles[i] != roles[i - 1] or roles[i] == "system")]
    if len(starts) >= n:  # no run (or no message): a turn per message
        return [new(Turn, (role, (i,))) for i, role in enumerate(roles)]
    ends = [*starts[1:], n]
    return [new(Turn, (roles[s], tuple(range(s, e)))) for s, e in zip(starts, ends, strict=True)]


def last_turns(history: Messages, merges: bool, count: int) -> list[Turn]:
    """The last ``count`` turns (or fewer) of :func:`turns`: of a history whose turns are its
    messages, made without the others (two rules read only the end of the conversation)."""
    roles = history.roles
    if merges and not (fast.FAST and index_of(history).alternates()):
        return turns(history, merges)[-count:]
    start = max(len(roles) - count, 0)
    return [Turn(roles[i], (i,)) for i in range(start, len(roles))]


def turn_positions(ts: list[Turn]) -> list[int]:
    """The turn of every message position."""
    return [t for t, turn in enumerate(ts) for _ in turn.members]


def turn_blocks(history: Messages, turn: Turn) -> list[tuple[int, int, Block]]:
    """``(i, j, block)`` of every block of the turn, in order."""
    return [(i, j, b) for i in turn.members for j, b in enumerate(blocks(history.messages[i]))]


def with_content(message: Item, content: list[Block]) -> Item:
    """A copy of ``message`` with ``content``."""
    return {**message, "content": content}


def merged(history: Messages, members: tuple[int, ...]) -> Item:
    """The messages at ``members`` as one (the first's keys, every block in order)."""
    content: list[Block] = []
    for i in members:
        content.extend(as_blocks(history.messages[i]))
    return with_content(history.messages[members[0]], content)


def output_blocks(result: Block) -> list[Block]:
    """What a ``tool_result`` said, as user content blocks (text, images, documents kept;
    a ``tool_reference`` becomes text naming the tool)."""
    content = result.get("content")
    if content is None:
        return []
    if type(content) is str:
        return [{"type": "text", "text": content}] if content else []
    if type(content) is not list:
        return [{"type": "text", "text": json.dumps(content, sort_keys=True)}]
    return [reference_text(b) if _is_reference(b) else b for b in content if _kept(b)]


def _kept(block: Any) -> bool:
    return type(block) is dict and not (block.get("type") == "text" and not block.get("text"))


def _is_reference(block: Block) -> bool:
    return block.get("type") == "tool_reference"


def reference_text(block: Block) -> Block:
    """A ``tool_reference`` as a text naming the tool (M23's repair)."""
    return {"type": "text", "text": f"{TAG} Tool reference: {block.get('tool_name')}"}
