"""What each function of :mod:`proxy.core.chat.fast` computes, said in plain Python.

The definitions the speed layer is held to: ``tests/core/chat/test_fast.py`` checks every
function of :mod:`~proxy.core.chat.fast` against its twin of the same name here (the same
result, or the same exception), on realistic and on odd histories. Nothing on the request path
calls these: they are the reference, as slow as they are plain.
"""

from __future__ import annotations

from collections.abc import Iterable, Sized
from functools import cached_property
from re import Pattern
from typing import Any, TypeVar

T = TypeVar("T")

#: :class:`proxy.core.chat.fast.cached`, with the standard library's lock.
cached = cached_property


def at(items: list[Any], positions: list[int]) -> list[Any]:
    return [items[p] for p in positions]


def values(items: Iterable[Any], key: str) -> list[Any]:
    return [item[key] for item in items]


def gets(messages: Iterable[dict[str, Any]], key: str) -> list[Any]:
    return [message.get(key) for message in messages]


def filled(messages: Iterable[dict[str, Any]], key: str) -> bool:
    return all(isinstance(message.get(key), str) and message[key] != "" for message in messages)


def lacking(messages: Iterable[dict[str, Any]], key: str) -> bool:
    return any(message.get(key) is None for message in messages)


def union(items: Iterable[Iterable[Any]]) -> frozenset[Any]:
    found: set[Any] = set()
    for item in items:
        found.update(item)
    return frozenset(found)


def types(items: Iterable[Any]) -> frozenset[type]:
    return frozenset(type(item) for item in items)


def only(items: list[Any], allowed: tuple[Any, ...]) -> bool:
    return all(item in allowed for item in items)


def flatten(lists: Iterable[Iterable[Any]]) -> list[Any]:
    return [item for items in lists for item in items]


def roles_before(messages: list[dict[str, Any]], positions: list[int]) -> list[Any]:
    return [messages[p - 1]["role"] for p in positions]


def spots(callers: list[int], call_lists: list[list[Any]]) -> list[int]:
    return [
        c + 1 + k for c, calls in zip(callers, call_lists, strict=True) for k in range(len(calls))
    ]


def owners(callers: list[int], call_lists: list[list[Any]]) -> list[int]:
    return [c for c, calls in zip(callers, call_lists, strict=True) for _ in calls]


def offsets(lists: Iterable[Sized]) -> list[int]:
    found = [0]
    for items in lists:
        found.append(found[-1] + len(items))
    return found


def longest(items: Iterable[Sized]) -> int:
    return max((len(item) for item in items), default=0)


def filled_strings(items: list[Any]) -> bool:
    return all(isinstance(item, str) and item != "" for item in items)


def all_match(pattern: Pattern[str], items: Iterable[Any]) -> bool:
    return all(pattern.fullmatch(item) is not None for item in items)


def where_none(positions: Iterable[int], items: Iterable[Any]) -> list[int]:
    return [p for p, item in zip(positions, items, strict=True) if item is None]


def held(items: Iterable[Any], key: Any) -> bool:
    return any(key in item for item in items)


def without(positions: Iterable[int], drop: set[int]) -> list[int]:
    return [p for p in positions if p not in drop]


def singletons(items: Iterable[T]) -> list[list[T]]:
    return [[item] for item in items]


def sort_each(lists: Iterable[list[Any]]) -> None:
    for items in lists:
        items.sort()
