"""The Messages index of an ordinary history, built with fewer steps per block (a fenced fast
path: its plain twin is :func:`proxy.core.messages.index.walk`).

The walk that checks and indexes a history is the one Python-level loop over every block of
every request (issue 34: most of a clean Messages body's check). It costs what it does per
block, so this walk does less for the blocks clients send most (``text``, ``tool_use``,
``tool_result``, ``thinking``): it reads each key it needs with ``[]`` (a missing key or a
block that is no object raises, instead of being tested), dispatches on the type once, and
tells a block with nothing more from its number of keys (a ``text`` block of two keys has no
``cache_control``). The checks of the values read (every role, text and id a string, every
call named, with an object input) are made after the loop over whole columns, in C (a
column of strings joins; parsed JSON holds no subclass of ``str``). What the rules would
otherwise each compute from the index it hands over with it, found in the same loop: the id
columns, the set of roles, whether results open their messages and whether each sits in the
user message right after its call's (pairing in order), told from two counters and two
flags, not from the blocks' places.

The blocks' places (``(i, j, block)`` of each type, :attr:`Index.by_type`) are what a clean
history's rules never read: the walk notes only which types are present and leaves the
grouping to :class:`Grouped`, done the first time a rule reads a type's blocks (a repair, a
provider's rule that lists them). A block out of the ordinary that needs its place (cache
breakpoints, an odd server call) finds it by identity in its message.

Anything out of the ordinary (a missing or misshapen key, a call without a name) is left to
the plain walk: :func:`walked` answers None and the caller walks the history again the plain
way, which says what is wrong, or indexes the unusual blocks. So this walk never has to be
right about an unusual history, only to know that it is one; ``tests/core/messages/
test_fastwalk.py`` holds it to the plain walk (and to what the plain index finds when asked)
on ordinary and broken histories.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from proxy.core.messages.index import Index, Located, _marked_inside, _unusual_content, breakpoints
from proxy.errors import MalformedHistory

_STR = {str}
_DICT = {dict}


def walked(messages: list[Any]) -> Index | None:
    """The index :func:`~proxy.core.messages.index.walk` makes of ``messages``, when they are
    ordinary; None when the plain walk must look (it also raises the shape errors)."""
    try:
        return _walk(messages)
    except (KeyError, TypeError, MalformedHistory):  # a key missing, a block no object…
        return None


def _walk(messages: list[Any]) -> Index:  # noqa: C901, PLR0912 - one flat loop: a call per block costs more
    roles, empty, marked, odd, texts, ids, names, inputs, answers, thinking = _columns(10)
    kinds: set[str] = set()  # the types other than the four the loop counts
    # Pairing's questions: no tool_result after another block of its message (lead); every
    # call in an assistant message, answered in order by the user message after it (follow).
    lead = follow = True
    owed = made = 0  # results the message still owes the previous one's calls; its own calls
    for i, message in enumerate(messages):
        roles.append(role := message["role"])
        content = message["content"]
        if owed:  # the previous message did not answer as many calls as the one before made
            follow = False
        owed, made, other = made, 0, False
        if type(content) is not list or not content:
            _unusual_content(i, content, empty)
            continue
        for block in content:
            kind = block["type"]
            if kind == "tool_result":
                if other:
                    lead = False
                if role != "user":
                    follow = False
                owed -= 1
                answers.append(block["tool_use_id"])
                if "cache_control" in block or type(block.get("content")) is list:
                    _maybe_mark(i, content, block, marked)
            elif kind == "text":
                other = True
                texts.append(block["text"])
                if len(block) != 2:  # more than its type and text: perhaps cache_control
                    _maybe_mark(i, content, block, marked)
            elif kind == "tool_use":
                other = True
                if role != "assistant":
                    follow = False
                made += 1
                ids.append(block["id"])
                names.append(block["name"])
                inputs.append(block["input"])
                if len(block) != 4:  # more than type, id, name and input
                    _maybe_mark(i, content, block, marked)
            elif kind == "thinking":
                other = True
                thinking.append(block)
                if len(block) != 3:  # more than type, thinking and signature
                    _maybe_mark(i, content, block, marked)
            else:
                other = True
                _other(i, content, block, kinds, odd)
                _maybe_mark(i, content, block, marked)
    present = {"text": texts, "tool_use": ids, "tool_result": answers, "thinking": thinking}
    kinds.update(kind for kind, found in present.items() if found)
    columns = (texts, ids, names, inputs, answers, thinking)
    return _index(
        messages,
        roles,
        columns=columns,
        kinds=kinds,
        found=(empty, marked, odd),
        paired={"results_lead": lead, "results_follow_calls": follow and not owed and not made},
    )


def _index(
    messages: list[Any],
    roles: list[Any],
    *,
    columns: tuple[list[Any], ...],
    kinds: set[str],
    found: tuple[list[Any], ...],
    paired: dict[str, bool],
) -> Index:
    """The index of the walked history, once its columns are checked."""
    texts, ids, names, inputs, answers, thinking = columns
    role_set = frozenset(roles)  # the rules ask for it; its few members are checked
    _check_columns(role_set, texts, (ids, names, inputs), answers)
    by_type = Grouped(messages, kinds)
    blank = _blank(by_type["text"], texts) if not all(texts) or any(map(str.isspace, texts)) else []
    values: dict[Any, Any] = {
        ("values", "tool_use", "id"): ids,
        ("values", "tool_result", "tool_use_id"): answers,
        ("blocks", "thinking"): thinking,
        **paired,
        "role_set": role_set,
    }
    empty, marked, odd = found
    return Index(roles, by_type, empty, blank, marked, odd, _found=values)


def _columns(n: int) -> list[list[Any]]:
    return [[] for _ in range(n)]


def _check_columns(
    role_set: frozenset[Any], texts: list[Any], calls: tuple[list[Any], ...], answers: list[Any]
) -> None:
    """Every role, text and id a string, every call named, with an object input; else a
    TypeError leaves the history to the plain walk (a shape error, or an odd call). A column
    of strings is checked by joining it: ``str.join`` raises on anything else, in fewer steps
    than a set of the column's types."""
    ids, names, inputs = calls
    if set(map(type, role_set)) != _STR:
        raise TypeError("a role that is no string")
    for column in (texts, ids, names, answers):
        "".join(column)  # a TypeError for a text or id that is no string
    if not all(names) or (inputs and set(map(type, inputs)) != _DICT):
        raise TypeError("a call without a name or an object input")


def _other(i: int, content: list[Any], block: Any, kinds: set[str], odd: list[Located]) -> None:
    """A block of another type (a string), checked as the plain walk checks it: a
    ``server_tool_use`` has a string id, and is odd without a name or an object input."""
    kind = block["type"]
    if type(kind) is not str:
        raise TypeError(kind)  # a shape error: the plain walk says where
    kinds.add(kind)
    if kind == "server_tool_use":
        if type(block.get("id")) is not str:
            raise TypeError(block.get("id"))  # a shape error: the plain walk says where
        name = block.get("name")
        if type(name) is not str or not name or type(block.get("input")) is not dict:
            odd.append((i, _place(content, block), block))


def _maybe_mark(i: int, content: list[Any], block: Any, marked: list[tuple[int, int, int]]) -> None:
    """The plain walk's test for a block that may carry cache breakpoints."""
    if "cache_control" in block or (
        type(inner := block.get("content")) is list and _marked_inside(inner)
    ):
        marks = breakpoints(block)
        if marks:
            marked.append((i, _place(content, block), marks))


def _place(content: list[Any], block: Any) -> int:
    """Where ``block`` sits in ``content`` (by identity: two equal blocks are two places)."""
    for j, other in enumerate(content):
        if other is block:
            return j
    raise ValueError(block)  # never: the block is in its message


class Grouped(Mapping[str, list[Located]]):
    """:attr:`Index.by_type` of a history the fast walk checked: which types are present is
    known, their blocks are grouped when a rule first reads them (one pass over the blocks),
    the types listed in the order the plain walk meets them (found by walking only as far as
    the last type's first block)."""

    __slots__ = ("_groups", "_kinds", "_messages", "_order")

    def __init__(self, messages: list[Any], kinds: set[str]) -> None:
        self._messages = messages
        self._kinds = kinds
        self._order: list[str] | None = None
        self._groups: dict[str, list[Located]] | None = None

    def __contains__(self, kind: object) -> bool:
        return kind in self._kinds

    def __len__(self) -> int:
        return len(self._kinds)

    def __iter__(self) -> Iterator[str]:
        if self._order is None:
            self._order = _first_met(self._messages, len(self._kinds))
        return iter(self._order)

    def __getitem__(self, kind: str) -> list[Located]:
        if kind not in self._kinds:
            raise KeyError(kind)
        if self._groups is None:
            self._groups = _grouped(self._messages)
        return self._groups[kind]

    def get(self, kind: str, default: Any = None) -> Any:
        return self[kind] if kind in self._kinds else default


def _first_met(messages: list[Any], count: int) -> list[str]:
    """The first ``count`` block types met, in order (the history holds that many)."""
    met: dict[str, None] = {}
    for message in messages:
        content = message["content"]
        for block in content if type(content) is list else ():
            met[block["type"]] = None
        if len(met) == count:
            break
    return list(met)


def _grouped(messages: list[Any]) -> dict[str, list[Located]]:
    """``(i, j, block)`` of every block, by type, in order (of a history the walk checked)."""
    groups: dict[str, list[Located]] = {}
    for i, message in enumerate(messages):
        content = message["content"]
        for j, block in enumerate(content if type(content) is list else ()):
            kind = block["type"]
            if kind in groups:
                groups[kind].append((i, j, block))
            else:
                groups[kind] = [(i, j, block)]
    return groups


def _blank(texts_at: list[Located], texts: list[str]) -> list[tuple[int, int]]:
    """The places of the empty or whitespace-only texts."""
    return [
        (i, j)
        for (i, j, _), text in zip(texts_at, texts, strict=True)
        if text.isspace() or not text
    ]
