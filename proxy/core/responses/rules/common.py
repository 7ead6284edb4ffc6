"""What several Responses rules share: the pairing analysis and the rebuild helpers.

Pairing follows how the Responses API reads ``input`` (responses-api.md A4, the codex fork's
comment): sequentially, binding each output to the earliest call with its ``call_id`` that is
still open before it, one to one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat
from operator import gt, lt

from proxy.core.responses import index as fast
from proxy.core.responses.items import (
    OUTPUTS,
    Item,
    Items,
    call_key,
    is_model_item,
    kind,
    needs_output,
)
from proxy.core.responses.rules.facts import ToolFacts, tool_facts
from proxy.core.rule import rule_for

#: How this package's rules are declared (the API is 'responses'; the name, the function's).
rule = rule_for("responses")

Entries = list[tuple[Item, int | None]]  # (item, its position, None if new)


@dataclass(slots=True)
class Pairing:
    """Which outputs answer which calls, and what is left over."""

    misplaced: dict[int, int] = field(default_factory=dict)  # output -> the later call it answers
    unbound: list[int] = field(default_factory=list)  # outputs answering no call in the input
    open: list[int] = field(default_factory=list)  # calls no output answers


def answers_a_call(item: Item) -> bool:
    """An output the client must bind to a call (server-run ``tool_search_output`` needs none)."""
    k = kind(item)
    if k == "tool_search_output":
        return item.get("execution") == "client"
    return k in OUTPUTS


def pairing(history: Items) -> Pairing:
    """The pairing of ``history`` (memoised: several rules read it)."""
    return history.memo("pairing", _pair)


def _pair(history: Items) -> Pairing:
    facts = tool_facts(history)
    if fast.FAST and facts is not None and facts.distinct:
        return _pair_distinct(facts)
    result = Pairing()
    open_calls: dict[str, deque[int]] = {}
    early: list[tuple[int, str]] = []
    for i, item in enumerate(history.messages):
        key = call_key(item)
        if key is None:
            continue
        if needs_output(item):
            open_calls.setdefault(key, deque()).append(i)
        elif answers_a_call(item):
            waiting = open_calls.get(key)
            if waiting:
                waiting.popleft()  # answered
            else:
                early.append((i, key))
    for i, key in early:  # outputs sent before their call: bind them to a later open call
        waiting = open_calls.get(key)
        if waiting:
            result.misplaced[i] = waiting.popleft()
        else:
            result.unbound.append(i)
    result.open = sorted(c for waiting in open_calls.values() for c in waiting)
    return result


def _pair_distinct(facts: ToolFacts) -> Pairing:
    """:func:`_pair` when no two calls share a call_id, nor two outputs: each output binds to
    the one call with its call_id, answered if the call comes first, misplaced if it comes
    later, unbound if there is none; a call is open when no output has its call_id."""
    if facts.in_order and all(map(gt, facts.outputs, facts.calls)):
        return Pairing()  # the k-th output answers the k-th call, and comes after it
    where = dict(zip(facts.call_keys, facts.calls, strict=True))
    bound = list(map(where.get, facts.output_keys, repeat(-1)))  # -1: no call has its call_id
    result = Pairing()
    if any(map(lt, facts.outputs, bound)):  # some output comes before its call
        pairs = zip(facts.outputs, bound, strict=True)
        result.misplaced = {o: c for o, c in pairs if c > o}
    stray, unanswered = facts.answered - facts.called, facts.called - facts.answered
    if stray:
        answering = dict(zip(facts.output_keys, facts.outputs, strict=True))
        result.unbound = sorted(map(answering.__getitem__, stray))
    result.open = sorted(map(where.__getitem__, unanswered))
    return result


def block_end(items: list[Item], c: int) -> int:
    """Where the outputs of the call at ``c`` end: after the calls right behind it (parallel
    calls of the same response) and the outputs after those. Never between a reasoning item
    and what it produced, nor after a message the model wrote once the calls were answered."""
    j, outputs_seen = c + 1, False
    while j < len(items):
        item = items[j]
        if kind(item) in OUTPUTS:
            outputs_seen = True
        elif outputs_seen or not is_model_item(item) or kind(item) in _NOT_CALLS:
            break
        j += 1
    return j


_NOT_CALLS = frozenset({"message", "reasoning"})


def insert_before(history: Items, inserts: dict[int, Entries], skip: Iterable[int]) -> Items:
    """Rebuild without the ``skip`` positions, adding ``inserts[j]`` right before position j
    (``inserts[len(history)]`` at the end).

    The runs between the edits are copied as slices (:meth:`~proxy.core.history.CopyOnWrite.
    edited` inserts after a position: right before j is right after j - 1)."""
    if 0 not in inserts:
        return history.edited({j - 1: entries for j, entries in inserts.items()}, skip)
    dropped = set(skip)
    entries: Entries = []
    for i, item in enumerate(history.messages):
        entries.extend(inserts.get(i, ()))
        if i not in dropped:
            entries.append((item, i))
    entries.extend(inserts.get(len(history), ()))
    return history.rebuild(entries)
