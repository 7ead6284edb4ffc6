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

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from itertools import chain, compress
from operator import eq, itemgetter
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
_POSITION, _BLOCK = itemgetter(0), itemgetter(2)


@dataclass(frozen=True, slots=True)
class Index:
    """What one walk over a Messages history found. Read-only: rules never change it."""

    roles: list[Any]  # the role of every message
    #: The blocks of each type, in order (a dict; grouped when first read after the fast walk).
    by_type: Mapping[str, list[Located]]
    empty: list[int]  # messages without content: "", whitespace only, []
    blank: list[tuple[int, int]]  # empty or whitespace-only text blocks
    marked: list[tuple[int, int, int]]  # blocks with cache_control: (i, j, breakpoints)
    odd_calls: list[Located]  # tool_use and server_tool_use blocks without a name or input
    #: What :meth:`holders`, :meth:`values`, :meth:`role_set`… found (made when asked, or
    #: handed over by the fast walk, :mod:`~proxy.core.messages.fastwalk`, which finds some in
    #: its loop; keyed by the method's name, and its arguments where it takes some).
    _found: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def of(self, kind: str) -> list[Located]:
        """The blocks of type ``kind``, in order."""
        return self.by_type.get(kind, _NO_BLOCKS)

    def has(self, kinds: frozenset[str]) -> bool:
        """Whether some block is of one of ``kinds``."""
        return any(map(self.by_type.__contains__, kinds))

    def of_any(self, kinds: frozenset[str]) -> list[Located]:
        """The blocks of any of ``kinds``, in order."""
        present = [self.by_type[kind] for kind in kinds if kind in self.by_type]
        if len(present) == 1:
            return present[0]
        return sorted(b for found in present for b in found)  # no two blocks share (i, j)

    def blocks(self, kind: str) -> list[Block]:
        """The blocks of type ``kind``, in order, without their places (made when asked, or
        handed over by the fast walk, which need not find the places then)."""
        found = self._found.get(("blocks", kind))
        if found is None:
            found = self._found[("blocks", kind)] = column(self.of(kind), 2)
        return found

    def holders(self, kind: str) -> frozenset[int]:
        """The positions of the messages holding a block of type ``kind`` (made when asked)."""
        found = self._found.get(("holders", kind))
        if found is None:
            found = self._found[("holders", kind)] = frozenset(map(_POSITION, self.of(kind)))
        return found

    def values(self, kind: str, key: str) -> list[Any]:
        """``block[key]`` of every block of type ``kind``, in order (a key the walk checked on
        every such block: the ids), made once for the rules that read them (ids, pairing)."""
        found = self._found.get(("values", kind, key))
        if found is None:
            blocks = map(_BLOCK, self.of(kind))
            found = self._found[("values", kind, key)] = list(map(itemgetter(key), blocks))
        return found

    def ids_unique(self) -> bool:
        """Whether no two ``tool_use`` blocks share an id (made once: the ids rule and
        pairing ask)."""
        found = self._found.get("ids_unique")
        if found is None:
            ids = self.values("tool_use", "id")
            found = self._found["ids_unique"] = len(set(ids)) == len(ids)
        return found

    def answered_in_order(self) -> bool:
        """Whether the ``tool_result`` ids are the ``tool_use`` ids, in the same order (made
        once: the ids' pattern and pairing ask)."""
        found = self._found.get("answered_in_order")
        if found is None:
            answers = self.values("tool_result", "tool_use_id")
            found = answers == self.values("tool_use", "id")
            self._found["answered_in_order"] = found
        return found

    def role_set(self) -> frozenset[Any]:
        """The roles the messages have (made once: two rules ask whether one is there)."""
        found = self._found.get("role_set")
        if found is None:
            found = self._found["role_set"] = frozenset(self.roles)
        return found

    def alternates(self) -> bool:
        """Whether no two neighbouring messages share a role other than ``system`` (then a
        provider that merges such messages reads one turn per message, as one that does not)."""
        found = self._found.get("alternates")
        if found is None:
            roles = self.roles
            same = list(compress(roles[1:], map(eq, roles[1:], roles)))  # C-level loops
            found = self._found["alternates"] = same.count("system") == len(same)
        return found

    def holds(self, i: int, kinds: AbstractSet[str]) -> bool:
        """Whether message ``i`` holds a block of one of ``kinds``."""
        return any(i in self.holders(kind) for kind in kinds)

    def in_messages(self, members: tuple[int, ...], kind: str) -> bool:
        """Whether one of the messages at ``members`` holds a block of type ``kind``."""
        holders = self.holders(kind)
        return any(i in holders for i in members)

    def results_lead(self) -> bool:
        """Whether each message's ``tool_result`` blocks open it (sit at 0, 1, … of its
        content), as pairing in order wants them (made once; the fast walk finds it)."""
        found = self._found.get("results_lead")
        if found is None:
            results = self.of("tool_result")
            found = self._found["results_lead"] = column(results, 1) == ranks(column(results, 0))
        return found

    def results_follow_calls(self) -> bool:
        """Whether the ``k``-th ``tool_result`` sits in the message right after the one of
        the ``k``-th ``tool_use``, every call in an assistant message and every result in a
        user message (as many of each): pairing in order, said of messages (made once; the
        fast walk finds it)."""
        found = self._found.get("results_follow_calls")
        if found is None:
            callers = column(self.of("tool_use"), 0)
            holders = column(self.of("tool_result"), 0)
            roles = self.roles
            found = (
                [i + 1 for i in callers] == holders
                and all(roles[i] == "assistant" for i in callers)
                and all(roles[i] == "user" for i in holders)
            )
            self._found["results_follow_calls"] = found
        return found

    def role_kinds(self) -> dict[Any, set[str]]:
        """The block types found under each role (read by one rule, on one provider)."""
        found: dict[Any, set[str]] = {}
        for kind, located in self.by_type.items():
            for role in {self.roles[i] for i, _, _ in located}:
                found.setdefault(role, set()).add(kind)
        return found


def column(entries: Sequence[tuple[Any, ...]], k: int) -> list[Any]:
    """``entry[k]`` of each entry (the message positions, block places or blocks of
    :data:`Located` entries), in C."""
    return list(map(itemgetter(k), entries))


def ranks(positions: list[int]) -> list[int]:
    """For each of the sorted ``positions``, how many before it are equal: the place each
    result would have if a message's results opened it (``[3, 3, 5] -> [0, 1, 0]``)."""
    return list(chain.from_iterable(map(range, Counter(positions).values())))


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
    place. One walk instead of a check and an index (issue 34).

    The one Python-level loop over every block: its body is kept minimal (each key read
    once, one test per usual block, no call; what is out of the ordinary is handled out of
    the loop). A text is usual when it is a string with something besides whitespace; a call
    (``tool_use``, ``server_tool_use``) when its id is a string, its ``name`` a non-empty
    string and its ``input`` an object (else *odd*: what ``messages_tool_use_shape`` looks
    for); a result when its id is a string; a block is marked when it or a block inside its
    ``content`` has ``cache_control``."""
    try:
        return _walk(messages)
    except TypeError:  # a block whose type cannot be a key (an object, a list): say which
        for i, j, block in _blocks_of(messages):
            if type(block.get("type")) in (dict, list):
                raise _block_error(i, j, ".type", "Field required (a string)") from None
        raise


def _blocks_of(messages: list[Any]) -> Iterator[tuple[int, int, Block]]:
    """``(i, j, block)`` of every object block of every message (of a history walked up to a
    block it could not index)."""
    for i, message in enumerate(messages):
        content = message.get("content")
        for j, block in enumerate(content if type(content) is list else ()):
            if type(block) is dict:
                yield i, j, block


def _walk(messages: list[Any]) -> Index:
    """:func:`walk`, for a history whose block types are all keys."""
    roles: list[Any] = []
    by_type: dict[str, list[Located]] = {}
    empty: list[int] = []
    blank: list[tuple[int, int]] = []
    marked: list[tuple[int, int, int]] = []
    odd: list[Located] = []
    for i, message in enumerate(messages):
        if type(message) is not dict or type(role := message.get("role")) is not str:
            raise _message_error(i, message)
        roles.append(role)
        content = message.get("content")
        if type(content) is not list or not content:
            _unusual_content(i, content, empty)
            continue
        for j, block in enumerate(content):
            kind = block.get("type") if type(block) is dict else None
            if kind in by_type:
                by_type[kind].append((i, j, block))
            else:
                _new_kind(i, j, block, by_type)
            if kind == "text":
                text = block.get("text")
                if type(text) is not str or not text or text.isspace():
                    _unusual_text(i, j, text, blank)
            elif kind in _ID_KEYS and (
                type(block.get(_ID_KEYS[kind])) is not str
                or (
                    kind != "tool_result"
                    and (
                        type(name := block.get("name")) is not str
                        or not name
                        or type(block.get("input")) is not dict
                    )
                )
            ):
                _unusual_tool(i, j, block, odd)
            if "cache_control" in block or (
                type(inner := block.get("content")) is list and _marked_inside(inner)
            ):
                _mark(i, j, block, marked)
    return Index(roles, by_type, empty, blank, marked, odd)


def _message_error(i: int, message: Any) -> MalformedHistory:
    if type(message) is not dict:
        return MalformedHistory(f"messages[{i}] must be an object.", f"messages[{i}]")
    where = f"messages[{i}].role"
    return MalformedHistory(f"{where}: Field required (a string).", where)


def _unusual_content(i: int, content: Any, empty: list[int]) -> None:
    """A string content (empty when blank), an empty list (empty), else the shape error."""
    if type(content) is str:
        if not content or content.isspace():  # as ``not content.strip()``, without a copy
            empty.append(i)
    elif content == []:
        empty.append(i)
    else:
        raise _content_error(i, content)


def _marked_inside(inner: list[Any]) -> bool:
    """Whether a block inside a result's ``content`` has ``cache_control``."""
    for part in inner:  # noqa: SIM110 - any() over a generator costs a frame per result
        if type(part) is dict and "cache_control" in part:
            return True
    return False


def _new_kind(i: int, j: int, block: Any, by_type: dict[str, list[Located]]) -> None:
    """The first block of its type (a string, on an object), else the shape error."""
    if type(block) is not dict:
        raise _block_error(i, j, "", "must be an object")
    kind = block.get("type")
    if type(kind) is not str:
        raise _block_error(i, j, ".type", "Field required (a string)")
    by_type[kind] = [(i, j, block)]


def _unusual_text(i: int, j: int, text: Any, blank: list[tuple[int, int]]) -> None:
    if type(text) is not str:
        raise _block_error(i, j, ".text", "Field required (a string)")
    blank.append((i, j))  # empty or whitespace only


def _unusual_tool(i: int, j: int, block: Block, odd: list[Located]) -> None:
    key = _ID_KEYS[block["type"]]
    if type(block.get(key)) is not str:
        raise _block_error(i, j, f".{key}", "Field required (a string)")
    odd.append((i, j, block))  # a call without a name or an object input


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
