"""The chat speed layer: every C-level idiom the fast paths use, each a small named function.

A clean history is checked on every request, so the detectors first prove it clean over whole
groups of messages or calls at once, and Python-level loops cost more there than the check
itself: iteration built in C (``map``, ``itemgetter``, ``chain``, ``compress``, ``str.join``)
halves the cost of a clean check. Those idioms live here only, under names that say what they
compute; the rule modules call the names. Each function has a plain twin of the same name in
:mod:`proxy.core.chat.plain` that says the same in ordinary Python; ``tests/core/chat/
test_fast.py`` holds every pair equal (results, and the exception a bad input raises) on
realistic and on odd histories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Sized
from itertools import accumulate, chain, compress, filterfalse, repeat
from operator import add, contains, is_, itemgetter
from re import Pattern
from typing import Any, Generic, TypeVar, overload

T = TypeVar("T")


class cached(Generic[T]):
    """:func:`functools.cached_property` without its lock: Python 3.11's takes an ``RLock`` on
    each first computation, a measurable share of a clean history's check; an index belongs to
    one request and is never shared between threads."""

    def __init__(self, compute: Callable[[Any], T]) -> None:
        self.compute = compute
        self.name = compute.__name__
        self.__doc__ = compute.__doc__

    @overload
    def __get__(self, owner: None, cls: type | None = None) -> cached[T]: ...
    @overload
    def __get__(self, owner: object, cls: type | None = None) -> T: ...
    def __get__(self, owner: object | None, cls: type | None = None) -> T | cached[T]:
        if owner is None:
            return self
        value: T = self.compute(owner)
        owner.__dict__[self.name] = value  # found there from now on: no descriptor call
        return value

    @staticmethod
    def known(owner: object, name: str) -> tuple[bool, Any]:
        """Whether ``owner``'s cached view ``name`` was computed, and its value."""
        values = owner.__dict__
        return (True, values[name]) if name in values else (False, None)

    @staticmethod
    def seed(owner: object, name: str, value: Any) -> None:
        """Give ``owner``'s cached view ``name`` its value without computing it."""
        owner.__dict__[name] = value

    @staticmethod
    def carry(source: object, target: object, names: Iterable[str]) -> None:
        """Give ``target`` the cached views ``names`` that ``source`` computed."""
        found, into = source.__dict__, target.__dict__
        for name in names:
            if name in found:
                into[name] = found[name]


def at(items: list[Any], positions: list[int]) -> Sequence[Any]:
    """``items[p]`` for each of ``positions``, in order (itemgetter of one index is no tuple)."""
    if len(positions) > 1:
        return itemgetter(*positions)(items)  # type: ignore[no-any-return]
    # One position or none (the usual groups of a short history): a list display, not a
    # comprehension, which Python 3.11 runs as a function of its own.
    return [items[positions[0]]] if positions else []


def values(items: Iterable[Any], key: str) -> list[Any]:
    """``item[key]`` of each item; KeyError or TypeError when one lacks it or is no object."""
    return list(map(itemgetter(key), items))


def gets(messages: Iterable[dict[str, Any]], key: str) -> list[Any]:
    """``message.get(key)`` of each message (None where it is missing)."""
    return list(map(dict.get, messages, repeat(key)))


def filled(messages: Iterable[dict[str, Any]], key: str) -> bool:
    """Whether every message has a non-empty string at ``key`` (a message without one stops
    the look at once)."""
    try:
        return filled_strings(values(messages, key))
    except KeyError:
        return False


def lacking(messages: Iterable[dict[str, Any]], key: str) -> bool:
    """Whether some message has no ``key`` or a null one (the first such stops the look)."""
    return None in map(dict.get, messages, repeat(key))


def union(items: Iterable[Iterable[Any]]) -> frozenset[Any]:
    """Everything iterating the items yields (the union of their keys, for objects); TypeError
    when one is not iterable."""
    return frozenset().union(*items)


def types(items: Iterable[Any]) -> frozenset[type]:
    """The types of the items."""
    return frozenset(map(type, items))


def only(items: list[Any], allowed: tuple[Any, ...]) -> bool:
    """Whether every item equals one of ``allowed``.

    Counted, not hashed: a role fresh from the JSON parser has no cached hash, and hashing one
    costs more than comparing it with a literal or two.
    """
    return sum(map(items.count, allowed)) == len(items)


def flatten(lists: Iterable[Iterable[Any]]) -> list[Any]:
    """The items of every list, in order."""
    return list(chain.from_iterable(lists))


def roles_before(messages: list[dict[str, Any]], positions: list[int]) -> list[Any]:
    """The role of the message right before each position (the last message's, for 0)."""
    return values(at(messages, list(map(add, positions, repeat(-1)))), "role")


def spots(callers: list[int], call_lists: list[list[Any]]) -> list[int]:
    """The positions right after each caller, one per call: where its results sit when every
    call is answered in order right after its message."""
    starts = list(map(add, callers, repeat(1)))
    counts = list(map(len, call_lists))
    if counts.count(1) == len(counts):  # one call each (a range per caller costs ten times more)
        return starts
    return list(chain.from_iterable(map(range, starts, map(add, starts, counts))))


def owners(callers: list[int], call_lists: list[list[Any]]) -> list[int]:
    """Each caller once per call it makes; ``callers`` itself (read only) when each makes one."""
    counts = list(map(len, call_lists))
    if counts.count(1) == len(counts):
        return callers
    return list(chain.from_iterable(map(repeat, callers, counts)))


def offsets(lists: Iterable[Sized]) -> list[int]:
    """How many items the lists before each hold: ``[0, len(a), len(a) + len(b), …]``."""
    return list(accumulate(map(len, lists), initial=0))


def longest(items: Iterable[Sized]) -> int:
    """The greatest length among the items (0 for none); TypeError when one has no length."""
    return max(map(len, items), default=0)


def filled_strings(items: list[Any]) -> bool:
    """Whether every item is a non-empty string."""
    try:
        "".join(items)  # raises TypeError unless every item is a string
    except TypeError:
        return False
    return "" not in items


def all_match(pattern: Pattern[str], items: Iterable[Any]) -> bool:
    """Whether ``pattern`` matches every item whole; TypeError when one is no string."""
    return all(map(pattern.fullmatch, items))


def where_none(positions: Iterable[int], items: Iterable[Any]) -> list[int]:
    """The positions whose item (the one at the same place in ``items``) is None."""
    return list(compress(positions, map(is_, items, repeat(None))))


def held(items: Iterable[Any], key: Any) -> bool:
    """Whether some item holds ``key`` (the first that does stops the look)."""
    return any(map(contains, items, repeat(key)))


def without(positions: Iterable[int], drop: set[int]) -> list[int]:
    """``positions`` without those in ``drop``, in order."""
    return list(filterfalse(drop.__contains__, positions))


def singletons(items: Iterable[T]) -> list[list[T]]:
    """A one-item list of each item."""
    return list(map(list, zip(items)))


def sort_each(lists: Iterable[list[Any]]) -> None:
    """Sort each list in place."""
    list(map(list.sort, lists))
