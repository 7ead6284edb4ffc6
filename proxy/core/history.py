"""The copy-on-write history every wire API's rules work on (chat messages, Responses items).

A history is an immutable list of item dicts plus, for each, the index it had in the original
request, so that every finding can name a JSON path into what the client actually sent.
Repairs never mutate one: they return a new history that shares every unchanged item dict with
the old, so an untouched history stays the very same list object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Self, TypeVar

import proxy.errors

T = TypeVar("T")
Item = dict[str, Any]

EMPTY: Mapping[str, Any] = MappingProxyType({})


class CopyOnWrite:
    """The history machinery; a wire API's subclass says how its paths read (:meth:`path`)
    and when it is :attr:`tool_free`."""

    __slots__ = ("_memo", "messages", "origins", "request")

    def __init__(
        self,
        messages: list[Item],
        origins: list[int | None] | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> None:
        self.messages = messages  # the items, as they would be forwarded
        self.origins = origins  # None: item i came from index i
        #: The parsed request body, read-only (model-dependent rules read ``model``,
        #: ``thinking``, ``store``…); empty when the caller gave none.
        self.request: Mapping[str, Any] = EMPTY if request is None else request
        self._memo: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def tool_free(self) -> bool:
        """Whether no item is about a tool call (``tools_only`` rules are skipped then)."""
        raise NotImplementedError

    def path(self, i: int, where: str = "") -> str:
        """The JSON path, into the original request, of item ``i`` (plus ``where``)."""
        raise NotImplementedError

    def memo(self, key: str, compute: Callable[[Self], T]) -> T:
        """``compute(self)``, computed once per history: several detectors share one analysis."""
        if self._memo is None:
            self._memo = {}
        if key not in self._memo:
            self._memo[key] = compute(self)
        value: T = self._memo[key]
        return value

    def memoized(self, key: str) -> tuple[bool, Any]:
        """Whether :meth:`memo` computed ``key`` for this history, and what it found."""
        if self._memo is None or key not in self._memo:
            return False, None
        return True, self._memo[key]

    def seed(self, key: str, value: Any) -> None:
        """Give :meth:`memo` the value of ``key`` (an edit carrying a view over)."""
        if self._memo is None:
            self._memo = {}
        self._memo[key] = value

    def origin(self, i: int) -> int | None:
        return i if self.origins is None else self.origins[i]

    def replace(self, changes: Mapping[int, Item]) -> Self:
        """The same history with some items swapped for new dicts (positions unchanged)."""
        if not changes:
            return self
        items = list(self.messages)
        for i, item in changes.items():
            items[i] = item
        return type(self)(items, self.origins, self.request)

    def rebuild(self, entries: Iterable[tuple[Item, int | None]]) -> Self:
        """A new history from ``(item, position in this history or None if inserted)``."""
        items: list[Item] = []
        origins: list[int | None] = []
        for item, source in entries:
            items.append(item)
            origins.append(None if source is None else self.origin(source))
        return type(self)(items, origins, self.request)

    def edited(
        self, inserts: Mapping[int, Iterable[tuple[Item, int | None]]], skip: Iterable[int]
    ) -> Self:
        """A new history without the ``skip`` positions, with ``inserts[i]`` (as
        :meth:`rebuild` takes them) right after position i.

        :meth:`rebuild` of every kept item, but the runs between the edits are copied as slices:
        a repair that touches one message of a long history does not walk all of them.
        """
        skipped = set(skip)
        messages, origins = self.messages, self.origins
        items: list[Item] = []
        kept: list[int | None] = []
        runs: list[tuple[int, int, int]] = []  # (old start, old end, new start) of each slice
        start = 0
        points = sorted(p for p in skipped.union(inserts) if 0 <= p < len(messages))
        for point in [*points, len(messages)]:
            end = min(point if point in skipped else point + 1, len(messages))
            if end > start:
                runs.append((start, end, len(items)))
                items += messages[start:end]
                kept += range(start, end) if origins is None else origins[start:end]
            for item, source in inserts.get(point, ()) if point < len(messages) else ():
                items.append(item)
                kept.append(None if source is None else self.origin(source))
            start = point + 1
        edited = type(self)(items, kept, self.request)
        self._carry(edited, runs)
        return edited

    def _carry(self, edited: Self, runs: list[tuple[int, int, int]]) -> None:
        """Hand what is known of this history on to ``edited`` (items ``[start, end)`` of this
        one sit from ``new start`` on, in each run); a wire API's history may carry its views
        instead of computing them anew."""

    def entries(self) -> list[tuple[Item, int | None]]:
        """``(item, position)`` pairs, the usual start for :meth:`rebuild`."""
        return [(item, i) for i, item in enumerate(self.messages)]

    def without(self, drop: set[int]) -> Self:
        """The same history without the items at the ``drop`` positions."""
        return self.edited({}, drop)


#: Importable from here while core/chat/messages.py still does (the class: proxy.errors).
MalformedHistory = proxy.errors.MalformedHistory
