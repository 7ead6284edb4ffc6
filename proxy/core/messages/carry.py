"""Carrying a Messages history's index through an edit, so a repair does not pay for a second walk.

A repair changes one or a few messages of a long history (a thinking block added, a result
moved, an empty message dropped); the rules after it, and the engine's next pass, read the new
history. :meth:`~proxy.core.messages.items.Messages.replace` swaps some messages in place, and
:meth:`~proxy.core.history.CopyOnWrite.edited` builds the new history from runs of the old one,
copied as slices, and the messages it inserts: the index of the new one is the old one's
entries, run by run, shifted (found by bisection), plus what a walk of the new messages finds,
exactly what a fresh walk would find (``tests/core/messages/test_index.py`` compares them).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from proxy.core.messages.index import Index, Located, walk


def carry(old: Index, messages: list[Any], runs: list[tuple[int, int, int]]) -> Index:
    """The index of ``messages``, an edit of the history ``old`` indexes: the messages
    ``[start, end)`` of that history sit from ``new start`` on, in each run ``(start, end,
    new start)``; the messages between the runs are new. The runs' entries are shifted, only
    the new messages are walked (a repair touching one message of a long history does not
    index all of them again). An edit in many places (a thinking block added to every call)
    cuts the history into so many runs that moving them costs more than walking it all:
    then it is walked (each moved piece costs a few bisections and a slice per block type;
    walking costs about as much per message)."""
    pieces = len(runs) * (len(old.by_type) + 4)
    if 2 * pieces > len(messages):
        return walk(messages)
    return moved(old, messages, runs)


def moved(old: Index, messages: list[Any], runs: list[tuple[int, int, int]]) -> Index:
    """:func:`carry` by moving the runs' entries, whatever their number."""
    parts = _Parts()
    at = 0
    for start, end, new in [*sorted(runs, key=lambda run: run[2]), (0, 0, len(messages))]:
        if new > at:  # new messages: indexed alone, then shifted to where they sit
            parts.append(walk(messages[at:new]), 0, new - at, at)
        if end > start:
            parts.append(old, start, end, new - start)
        at = max(at, new + end - start)
    return Index(
        parts.roles, parts.by_type, parts.empty, parts.blank, parts.marked, parts.odd_calls
    )


@dataclass(slots=True)
class _Parts:
    """An :class:`Index` in the making, from pieces of other indexes (:func:`carry`)."""

    roles: list[Any] = field(default_factory=list)
    by_type: dict[str, list[Located]] = field(default_factory=dict)
    empty: list[int] = field(default_factory=list)
    blank: list[tuple[int, int]] = field(default_factory=list)
    marked: list[tuple[int, int, int]] = field(default_factory=list)
    odd_calls: list[Located] = field(default_factory=list)

    def append(self, index: Index, start: int, end: int, shift: int) -> None:
        """``index``'s entries of the messages ``[start, end)``, moved by ``shift`` (each
        list is in position order: a slice is found by bisection)."""
        self.roles += index.roles[start:end]
        for kind, located in index.by_type.items():
            found = _moved(located, start, end, shift)
            if found:
                self.by_type.setdefault(kind, []).extend(found)
        empty = index.empty[bisect_left(index.empty, start) : bisect_left(index.empty, end)]
        self.empty += [i + shift for i in empty]
        self.blank += _moved(index.blank, start, end, shift)
        self.marked += _moved(index.marked, start, end, shift)
        self.odd_calls += _moved(index.odd_calls, start, end, shift)


def _moved(entries: list[Any], start: int, end: int, shift: int) -> list[Any]:
    """The entries (tuples led by a message position) of the messages ``[start, end)``, moved."""
    part = entries[bisect_left(entries, (start,)) : bisect_left(entries, (end,))]
    return part if not shift else [(e[0] + shift, *e[1:]) for e in part]
