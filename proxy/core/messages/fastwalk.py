"""The Messages index of an ordinary history, built with fewer steps per block (a fenced fast
path: its plain twin is :func:`proxy.core.messages.index.walk`).

The walk that checks and indexes a history is the one Python-level loop over every block of
every request (issue 34: most of a clean Messages body's check). It costs what it does per
block, so this walk does less for the blocks clients send most (``text``, ``tool_use``,
``tool_result``, ``thinking``): it reads each key it needs with ``[]`` (a missing key or a
block that is no object raises, instead of being tested), dispatches on the type once, and
tells a block with nothing more from its number of keys (a ``text`` block of two keys has no
``cache_control``). The checks of the values read (every role, text and id a string, every
call named, with an object input) are made after the loop over whole columns, in C. What the
rules would otherwise each compute from the index it hands over with it, found in the same
loop: the id columns, the set of roles, whether results open their messages and whether each
sits in the user message right after its call's (pairing in order).

Anything out of the ordinary (a missing or misshapen key, a call without a name) is left to
the plain walk: :func:`walked` answers None and the caller walks the history again the plain
way, which says what is wrong, or indexes the unusual blocks. So this walk never has to be
right about an unusual history, only to know that it is one; ``tests/core/messages/
test_fastwalk.py`` holds it to the plain walk (and to what the plain index finds when asked)
on ordinary and broken histories.
"""

from __future__ import annotations

from typing import Any

from proxy.core.messages.index import (
    Index,
    Located,
    _marked_inside,
    _unusual_content,
    breakpoints,
)
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


def _walk(messages: list[Any]) -> Index:  # noqa: C901 - one flat loop: a call per block costs more
    roles, empty, marked, texts_at, texts, calls_at, ids, names, inputs = _columns(9)
    results_at, answers, thinking_at, odd = _columns(4)
    others: dict[str, list[Located]] = {}
    add_role = roles.append
    lead = True  # every tool_result so far opens its message (pairing's question)
    follow = True  # every call in an assistant message, result k in a user message after call k's
    for i, message in enumerate(messages):
        add_role(role := message["role"])
        content = message["content"]
        if type(content) is not list or not content:
            _unusual_content(i, content, empty)
            continue
        for j, block in enumerate(content):
            kind = block["type"]
            if kind == "tool_result":
                # a result after another block opens its message only after results
                lead = lead and (not j or content[j - 1]["type"] == "tool_result")
                k = len(results_at)
                follow = follow and role == "user" and k < len(calls_at) and calls_at[k][0] == i - 1
                results_at.append((i, j, block))
                answers.append(block["tool_use_id"])
                if "cache_control" in block or type(block.get("content")) is list:
                    _maybe_mark(i, j, block, marked)
            elif kind == "text":
                texts_at.append((i, j, block))
                texts.append(block["text"])
                if len(block) != 2:  # more than its type and text: perhaps cache_control
                    _maybe_mark(i, j, block, marked)
            elif kind == "tool_use":
                follow = follow and role == "assistant"
                calls_at.append((i, j, block))
                ids.append(block["id"])
                names.append(block["name"])
                inputs.append(block["input"])
                if len(block) != 4:  # more than type, id, name and input
                    _maybe_mark(i, j, block, marked)
            elif kind == "thinking":
                thinking_at.append((i, j, block))
                if len(block) != 3:  # more than type, thinking and signature
                    _maybe_mark(i, j, block, marked)
            else:
                _other(i, j, block, others, odd)
                _maybe_mark(i, j, block, marked)
    role_set = frozenset(roles)  # the rules ask for it; its few members are checked
    _check_columns(role_set, texts, (ids, names, inputs), answers)
    found = {"text": texts_at, "tool_use": calls_at, "tool_result": results_at}
    by_type = _by_type({**found, "thinking": thinking_at, **others})
    blank = _blank(texts_at, texts) if "" in texts or any(map(str.isspace, texts)) else []
    values = {
        ("values", "tool_use", "id"): ids,
        ("values", "tool_result", "tool_use_id"): answers,
        "results_lead": lead,
        "results_follow_calls": follow and len(results_at) == len(calls_at),
        "role_set": role_set,
    }
    return Index(roles, by_type, empty, blank, marked, odd, _found=values)


def _columns(n: int) -> list[list[Any]]:
    return [[] for _ in range(n)]


def _by_type(found: dict[str, list[Located]]) -> dict[str, list[Located]]:
    """The types met, in the order the plain walk meets them (by their first block)."""
    by_type = {kind: located for kind, located in found.items() if located}
    if len(by_type) > 1:
        by_type = dict(sorted(by_type.items(), key=_first_place))
    return by_type


def _check_columns(
    role_set: frozenset[Any], texts: list[Any], calls: tuple[list[Any], ...], answers: list[Any]
) -> None:
    """Every role, text and id a string, every call named, with an object input; else a
    TypeError leaves the history to the plain walk (a shape error, or an odd call)."""
    ids, names, inputs = calls
    strings = (role_set, texts, ids, names, answers)
    if any(column and set(map(type, column)) != _STR for column in strings):
        raise TypeError("a role, text or id that is no string")
    if "" in names or (inputs and set(map(type, inputs)) != _DICT):
        raise TypeError("a call without a name or an object input")


def _other(
    i: int, j: int, block: Any, others: dict[str, list[Located]], odd: list[Located]
) -> None:
    """A block of another type (a string), checked as the plain walk checks it: a
    ``server_tool_use`` has a string id, and is odd without a name or an object input."""
    kind = block["type"]
    if type(kind) is not str:
        raise TypeError(kind)  # a shape error: the plain walk says where
    others.setdefault(kind, []).append((i, j, block))
    if kind == "server_tool_use":
        if type(block.get("id")) is not str:
            raise TypeError(block.get("id"))  # a shape error: the plain walk says where
        name = block.get("name")
        if type(name) is not str or not name or type(block.get("input")) is not dict:
            odd.append((i, j, block))


def _maybe_mark(i: int, j: int, block: Any, marked: list[tuple[int, int, int]]) -> None:
    """The plain walk's test for a block that may carry cache breakpoints."""
    if "cache_control" in block or (
        type(inner := block.get("content")) is list and _marked_inside(inner)
    ):
        _mark(i, j, block, marked)


def _mark(i: int, j: int, block: Any, marked: list[tuple[int, int, int]]) -> None:
    marks = breakpoints(block)
    if marks:
        marked.append((i, j, marks))


def _first_place(entry: tuple[str, list[Located]]) -> tuple[int, int]:
    i, j, _ = entry[1][0]
    return i, j


def _blank(texts_at: list[Located], texts: list[str]) -> list[tuple[int, int]]:
    """The places of the empty or whitespace-only texts."""
    return [
        (i, j)
        for (i, j, _), text in zip(texts_at, texts, strict=True)
        if text.isspace() or not text
    ]
