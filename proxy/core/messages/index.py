"""One index per Messages history: what the rules look up, found in one walk over its blocks.

Every Messages rule used to walk every block of the history (issue 34: ``blocks_at`` ran
about 1,800 times for a 133-message body). The :class:`Index` is built in one pass (roles,
the blocks of each type in order, empty messages, blank texts, cache breakpoints; which
messages hold a type is derived when a rule asks) and memoised on the history
(:meth:`~proxy.core.history.CopyOnWrite.memo`), so that a clean history costs that one walk
plus the rules' lookups, as chat's ``Pairing`` is shared. A repair makes a new history object
(copy-on-write), which gets its own index; only
:meth:`~proxy.core.messages.items.Messages.with_fields` (the same messages) hands it on.

The index reads only the messages, never the request or a rule's parameters. The rules'
fast exits (:data:`FAST`) return early where the index proves they find nothing; the test
suite compares them with the rules run without them.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proxy.errors import MalformedHistory

if TYPE_CHECKING:
    from proxy.core.messages.items import Block, Messages

#: The rules take the early exits the index proves safe (the property tests turn them off and
#: compare).
FAST = True

#: (message position, block position, the block)
Located = tuple[int, int, "Block"]
_NO_BLOCKS: list[Located] = []


@dataclass(frozen=True, slots=True)
class Index:
    """What one walk over a Messages history found. Read-only: rules never change it."""

    roles: list[Any]  # the role of every message
    by_type: dict[str, list[Located]]  # the blocks of each type, in order
    empty: list[int]  # messages without content: "", whitespace only, []
    blank: list[tuple[int, int]]  # empty or whitespace-only text blocks
    marked: list[tuple[int, int, int]]  # blocks with cache_control: (i, j, breakpoints)
    #: :meth:`holders` made so far (a few rules on a few providers ask).
    _holders: dict[str, frozenset[int]] = field(default_factory=dict, compare=False, repr=False)

    def of(self, kind: str) -> list[Located]:
        """The blocks of type ``kind``, in order."""
        return self.by_type.get(kind, _NO_BLOCKS)

    def has(self, kinds: frozenset[str]) -> bool:
        """Whether some block is of one of ``kinds``."""
        return not kinds.isdisjoint(self.by_type)

    def of_any(self, kinds: frozenset[str]) -> list[Located]:
        """The blocks of any of ``kinds``, in order."""
        present = [self.by_type[kind] for kind in kinds if kind in self.by_type]
        if len(present) == 1:
            return present[0]
        return sorted(b for found in present for b in found)  # no two blocks share (i, j)

    def holders(self, kind: str) -> frozenset[int]:
        """The positions of the messages holding a block of type ``kind`` (made when asked)."""
        found = self._holders.get(kind)
        if found is None:
            found = self._holders[kind] = frozenset(i for i, _, _ in self.of(kind))
        return found

    def holds(self, i: int, kinds: AbstractSet[str]) -> bool:
        """Whether message ``i`` holds a block of one of ``kinds``."""
        return any(i in self.holders(kind) for kind in kinds)

    def in_messages(self, members: tuple[int, ...], kind: str) -> bool:
        """Whether one of the messages at ``members`` holds a block of type ``kind``."""
        holders = self.holders(kind)
        return any(i in holders for i in members)

    def role_kinds(self) -> dict[Any, set[str]]:
        """The block types found under each role (read by one rule, on one provider)."""
        found: dict[Any, set[str]] = {}
        for kind, located in self.by_type.items():
            for role in {self.roles[i] for i, _, _ in located}:
                found.setdefault(role, set()).add(kind)
        return found


def index_of(history: Messages) -> Index:
    """The :class:`Index` of ``history`` (memoised on it)."""
    return history.memo("index", build)


def build(history: Messages) -> Index:
    """One pass over every message and block of ``history`` (not memoised)."""
    return walk(history.messages)


def walk(messages: list[Any]) -> Index:
    """The :class:`Index` of ``messages``, checked in the same pass: the shape every policy
    needs (S1/S2: objects with a string ``role``; a string or list ``content`` of objects with
    a string ``type``; string ids on ``tool_use``, ``tool_result`` and ``server_tool_use``; a
    string ``text`` on text blocks), else :class:`~proxy.errors.MalformedHistory` naming the
    place. One walk instead of a check and an index (issue 34)."""
    roles: list[Any] = []
    by_type: dict[str, list[Located]] = {}
    empty: list[int] = []
    blank: list[tuple[int, int]] = []
    marked: list[tuple[int, int, int]] = []
    for i, message in enumerate(messages):
        if type(message) is not dict:
            raise MalformedHistory(f"messages[{i}] must be an object.", f"messages[{i}]")
        role = message.get("role")
        if type(role) is not str:
            where = f"messages[{i}].role"
            raise MalformedHistory(f"{where}: Field required (a string).", where)
        roles.append(role)
        content = message.get("content")
        if type(content) is not list:
            if type(content) is not str:
                raise _content_error(i, content)
            if not content.strip():
                empty.append(i)
            continue
        if not content:
            empty.append(i)
        _walk_blocks(i, content, by_type, blank, marked)
    return Index(roles, by_type, empty, blank, marked)


def _walk_blocks(
    i: int,
    content: list[Any],
    by_type: dict[str, list[Located]],
    blank: list[tuple[int, int]],
    marked: list[tuple[int, int, int]],
) -> None:
    """:func:`walk`'s pass over the blocks of message ``i``."""
    for j, block in enumerate(content):
        if type(block) is not dict:
            raise _block_error(i, j, "", "must be an object")
        kind = block.get("type")
        if kind in by_type:
            by_type[kind].append((i, j, block))
        elif type(kind) is str:
            by_type[kind] = [(i, j, block)]
        else:
            raise _block_error(i, j, ".type", "Field required (a string)")
        if kind == "text":
            text = block.get("text")
            if type(text) is not str:
                raise _block_error(i, j, ".text", "Field required (a string)")
            if not text.strip():
                blank.append((i, j))
        elif kind in _ID_KEYS and type(block.get(_ID_KEYS[kind])) is not str:
            raise _block_error(i, j, f".{_ID_KEYS[kind]}", "Field required (a string)")
        if "cache_control" in block or type(block.get("content")) is list:
            _mark(i, j, block, marked)


def _mark(i: int, j: int, block: Block, marked: list[tuple[int, int, int]]) -> None:
    marks = breakpoints(block)
    if marks:
        marked.append((i, j, marks))


_ID_KEYS = {"tool_use": "id", "tool_result": "tool_use_id", "server_tool_use": "id"}


def _content_error(i: int, content: Any) -> MalformedHistory:
    where = f"messages[{i}].content"
    problem = "Field required" if content is None else "must be a string or a list of blocks"
    return MalformedHistory(f"{where}: {problem}.", where)


def _block_error(i: int, j: int, key: str, problem: str) -> MalformedHistory:
    where = f"messages[{i}].content[{j}]{key}"
    return MalformedHistory(f"{where}{':' if key else ''} {problem}.", where)


def carry(old: Index, messages: list[Any], runs: list[tuple[int, int, int]]) -> Index:
    """The index of ``messages``, an edit of the history ``old`` indexes: the messages
    ``[start, end)`` of that history sit from ``new start`` on, in each run ``(start, end,
    new start)``; the messages between the runs are new. The runs' entries are shifted, only
    the new messages are walked (a repair touching one message of a long history does not
    index all of them again)."""
    parts = _Parts()
    at = 0
    for start, end, new in [*sorted(runs, key=lambda run: run[2]), (0, 0, len(messages))]:
        if new > at:  # new messages: indexed alone, then shifted to where they sit
            parts.append(walk(messages[at:new]), 0, new - at, at)
        if end > start:
            parts.append(old, start, end, new - start)
        at = max(at, new + end - start)
    return Index(parts.roles, parts.by_type, parts.empty, parts.blank, parts.marked)


@dataclass(slots=True)
class _Parts:
    """An :class:`Index` in the making, from pieces of other indexes (:func:`carry`)."""

    roles: list[Any] = field(default_factory=list)
    by_type: dict[str, list[Located]] = field(default_factory=dict)
    empty: list[int] = field(default_factory=list)
    blank: list[tuple[int, int]] = field(default_factory=list)
    marked: list[tuple[int, int, int]] = field(default_factory=list)

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


def _moved(entries: list[Any], start: int, end: int, shift: int) -> list[Any]:
    """The entries (tuples led by a message position) of the messages ``[start, end)``, moved."""
    part = entries[bisect_left(entries, (start,)) : bisect_left(entries, (end,))]
    return part if not shift else [(e[0] + shift, *e[1:]) for e in part]


def marked_at(block: Any) -> int:
    """1 when ``block`` is an object with ``cache_control`` set, else 0."""
    return int(type(block) is dict and block.get("cache_control") is not None)


def breakpoints(block: Block) -> int:
    """Breakpoints on a block and on the blocks inside its ``content`` (a tool result's)."""
    count = 1 if block.get("cache_control") is not None else 0
    inner = block.get("content")
    if type(inner) is list:
        count += sum(marked_at(b) for b in inner)
    return count
