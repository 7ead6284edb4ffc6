"""The pairing analysis of a Messages history, read per turn (see :mod:`.common`), and the
rebuild its repairs share.

A ``tool_result`` in a user turn *answers* a ``tool_use`` of the assistant turn right before
(the first result per id; later ones are *duplicates*). Any other result is *loose*: it is
*misplaced* when exactly one assistant turn holds an unanswered ``tool_use`` with its id (it
moves to the turn after that one), else an *orphan*. A ``tool_use`` with no answer in the
next turn and no misplaced result coming is *missing* its result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import add
from typing import Any

from proxy.core.chat.fast import at
from proxy.core.messages import index as fast
from proxy.core.messages.index import column, index_of
from proxy.core.messages.items import Block, Messages, blocks
from proxy.core.messages.rules.common import (
    TAG,
    Turn,
    output_blocks,
    turn_blocks,
    turn_positions,
    turns,
    with_content,
)

Place = tuple[int, int]  # (message position, block position)


@dataclass(slots=True)
class Pairing:
    """What is out of place: results left over, calls left without one (places of blocks).
    A history in order has an empty one (which result answers which call is no rule's
    business)."""

    duplicates: list[Place] = field(default_factory=list)
    moves: dict[Place, int] = field(default_factory=dict)  # result -> its call's turn
    orphans: list[Place] = field(default_factory=list)
    unhoisted: list[int] = field(default_factory=list)  # user turns: a result after text
    missing: list[tuple[Place, str, int]] = field(default_factory=list)  # call, id, its turn
    calls_in_user: list[Place] = field(default_factory=list)


def pairing(history: Messages, merges: bool) -> Pairing:
    """The pairing of ``history`` as a provider that ``merges`` (or not) reads it (memoised)."""
    key = "pairing_merged" if merges else "pairing"
    return history.memo(key, lambda h: _pair(h, merges))


def _pair(history: Messages, merges: bool) -> Pairing:
    if fast.FAST and not continues_thread(history):
        found = _in_order(history, merges)
        if found is not None:
            return found
    scan = _Scan(history, turns(history, merges))
    for t in scan.result_turns:  # the other turns hold nothing to sort
        scan.read_results(t)
    return scan.finish()


def _in_order(history: Messages, merges: bool) -> Pairing | None:
    """The pairing of a history in the usual order, read from the index alone: the k-th
    result answers the k-th call (ids unique), first in the user turn after the call's
    assistant turn, the turn's results opening its first message. None when it is not so
    (the scan then reads the turns).

    Said of whole columns at once (the ids, the calls' messages, the results' messages and
    places), each compared in a C-level step or two: no Python step per call."""
    index = index_of(history)
    if not index.answered_in_order() or not index.ids_unique():
        return None
    if not index.results_lead():
        return None
    if index.results_follow_calls():  # a result in the message after its call's: the next turn
        return Pairing()
    holders = column(index.of("tool_result"), 0)
    callers = column(index.of("tool_use"), 0)
    return Pairing() if _answered_next(history, merges, callers, holders) else None


def _answered_next(history: Messages, merges: bool, callers: list[int], holders: list[int]) -> bool:
    """Whether the result in the message at each of ``holders`` is in the user turn right
    after the assistant turn of the call in the message at the same place of ``callers``,
    in that turn's first message."""
    index = index_of(history)
    roles = index.roles
    if merges and not index.alternates():  # positions of turns, not of messages
        ts = turns(history, merges)
        turn_of, roles = turn_positions(ts), column(ts, 0)
        if _at([turn.first for turn in ts], _at(turn_of, holders)) != holders:
            return False  # a result in a message of its turn other than the first
        callers, holders = _at(turn_of, callers), _at(turn_of, holders)
    users, assistants = at(roles, holders), at(roles, callers)
    return (
        list(map(add, callers, repeat(1))) == holders
        and users.count("user") == len(users)
        and assistants.count("assistant") == len(assistants)
    )


def _at(items: list[Any], positions: list[int]) -> list[Any]:
    """``items[p]`` for each of ``positions`` (in C)."""
    return list(map(items.__getitem__, positions))


class _Scan:
    """One pass over the turns: calls per assistant turn, results sorted as they come."""

    def __init__(self, history: Messages, ts: list[Turn]) -> None:
        self.history, self.turns, self.result = history, ts, Pairing()
        self.index = index = index_of(history)
        #: The calls of each assistant turn (every one has an entry, in order).
        self.calls: dict[int, list[tuple[Place, str]]] = {
            c: [] for c, turn in enumerate(ts) if turn.role == "assistant"
        }
        tool_blocks = index.of("tool_use") or index.of("tool_result")
        turn_of = turn_positions(ts) if tool_blocks else []
        #: The turns holding a tool_result, in order.
        self.result_turns = sorted({turn_of[i] for i, _, _ in index.of("tool_result")})
        for i, j, b in index.of("tool_use"):
            c = turn_of[i]
            if c in self.calls:
                self.calls[c].append(((i, j), b["id"]))
            else:
                self.result.calls_in_user.append((i, j))
        self.answered: dict[int, set[str]] = {c: set() for c in self.calls}
        self.loose: list[tuple[Place, str]] = []
        #: A turn continuing a server-side thread sends only its new messages: results in its
        #: first turn answer calls the server holds (the SDK's threaded tool runner, beta
        #: ``message-threads``: ``thread: {"type": "continue", "previous_message_id": …}``).
        self.held = continues_thread(history)

    def read_results(self, t: int) -> None:
        """Sort the results of turn ``t`` into answered, duplicate and loose."""
        turn, result, messages = self.turns[t], self.result, self.history.messages
        if turn.role != "user":
            self.loose.extend(
                ((i, j), b["tool_use_id"])
                for i, j, b in turn_blocks(self.history, turn)
                if b["type"] == "tool_result"
            )
            return
        expected = {cid for _, cid in self.calls.get(t - 1, ())}
        if t == 0 and self.held:
            expected = {
                b["tool_use_id"]
                for i in turn.members
                for b in blocks(messages[i])
                if b["type"] == "tool_result"
            }
        seen: set[str] = set()
        text_seen = hoist = False
        for i in turn.members:
            content = messages[i]["content"]
            if type(content) is not list:  # a string: text before the blocks after it
                text_seen = text_seen or bool(content)
                continue
            for j, block in enumerate(content):
                if block["type"] != "tool_result":
                    text_seen = True
                    continue
                rid = block["tool_use_id"]
                if rid in seen:
                    result.duplicates.append((i, j))
                elif rid in expected:
                    seen.add(rid)
                    hoist = hoist or text_seen
                else:
                    self.loose.append(((i, j), rid))
        self.answered.get(t - 1, set()).update(seen)
        if hoist:
            result.unhoisted.append(t)

    def finish(self) -> Pairing:
        """Bind loose results to the one turn whose call waits for them; the rest are
        orphans, and calls still unanswered are missing their result."""
        open_calls: dict[str, list[int]] = {}
        for c, found in self.calls.items():
            for _, cid in found:
                if cid not in self.answered[c]:
                    open_calls.setdefault(cid, []).append(c)
        claimed: set[str] = set()
        for place, rid in self.loose:
            where = open_calls.get(rid, [])
            if len(where) == 1 and rid not in claimed:
                self.result.moves[place] = where[0]
                claimed.add(rid)
            else:
                self.result.orphans.append(place)
        for c, found in self.calls.items():
            for place, cid in found:
                if cid not in self.answered[c] and cid not in claimed:
                    self.result.missing.append((place, cid, c))
        return self.result


def continues_thread(history: Messages) -> bool:
    """Whether the request continues a server-side thread (the server holds what came before)."""
    thread = history.request.get("thread")
    return type(thread) is dict and thread.get("type") == "continue"


def salvaged(result: Block, header: str) -> list[Block]:
    """A result as user text: a line naming its call, then what it said (images kept)."""
    rid = result.get("tool_use_id")
    error = " (it reported an error)" if result.get("is_error") is True else ""
    line = header.replace("{id}", str(rid)) + error
    return [{"type": "text", "text": line}, *output_blocks(result)]


def lost_result(call_id: str, text: str) -> Block:
    """The result standing in for one that was lost: an error saying so, never an output."""
    return {"type": "tool_result", "tool_use_id": call_id, "content": text, "is_error": True}


def rebuild(
    history: Messages,
    merges: bool,
    contents: dict[int, list[Block]],
    after: dict[int, list[Block]],
    removed: set[Place],
) -> Messages:
    """The history with turn ``t`` replaced by one message holding ``contents[t]``, a new
    user message holding ``after[t]`` right after turn ``t``, and the ``removed`` blocks gone
    elsewhere (a message left without blocks goes too)."""
    ts = turns(history, merges)
    touched = set(contents) | set(after)
    if removed:
        turn_of = turn_positions(ts)
        touched.update(turn_of[i] for i, _ in removed)
    # Each touched turn's messages give way to its new entries; the rest is copied as slices.
    skip: set[int] = set()
    inserts: dict[int, list[tuple[dict[str, object], int | None]]] = {}
    for t in touched:
        turn = ts[t]
        entries: list[tuple[dict[str, object], int | None]]
        if t in contents:
            first = history.messages[turn.first]
            entries = [(with_content(first, contents[t]), turn.first)]
        else:
            entries = _kept(history, turn, removed)
        if t in after:
            entries.append(({"role": "user", "content": after[t]}, None))
        skip.update(turn.members)
        inserts[turn.last] = entries
    return history.edited(inserts, skip)


def _kept(
    history: Messages, turn: Turn, removed: set[Place]
) -> list[tuple[dict[str, object], int | None]]:
    kept: list[tuple[dict[str, object], int | None]] = []
    for i in turn.members:
        message = history.messages[i]
        content = blocks(message)
        if not any((i, j) in removed for j in range(len(content))):
            kept.append((message, i))
            continue
        left = [b for j, b in enumerate(content) if (i, j) not in removed]
        if left:
            kept.append((with_content(message, left), i))
    return kept


def turn_content(
    history: Messages, turn: Turn, removed: set[Place]
) -> tuple[list[Block], list[Block]]:
    """The turn's remaining ``(tool_result blocks, other blocks)``, in order (a string
    content as a text block)."""
    results = [
        b
        for i, j, b in turn_blocks(history, turn)
        if (i, j) not in removed and b["type"] == "tool_result"
    ]
    return results, _with_strings(history, turn, removed)


def _string_block(history: Messages, i: int) -> list[Block]:
    content = history.messages[i].get("content")
    return [{"type": "text", "text": content}] if type(content) is str and content else []


def _with_strings(history: Messages, turn: Turn, removed: set[Place]) -> list[Block]:
    """The non-result blocks of the turn, string contents as text blocks, in order."""
    others: list[Block] = []
    for i in turn.members:
        others.extend(_string_block(history, i))
        others.extend(
            b
            for j, b in enumerate(blocks(history.messages[i]))
            if (i, j) not in removed and b["type"] != "tool_result"
        )
    return others


SALVAGE_TEXT = f"{TAG} Output of tool call {{id}}, whose tool_use is not in the previous message:"
DUPLICATE_TEXT = f"{TAG} Another output of tool call {{id}}:"
LOST_TEXT = f"{TAG} The output of this tool call was lost before it reached the model."
