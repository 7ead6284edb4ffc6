"""One index per Responses history: what the rules look up, found in one walk over its items.

The :class:`Index` is built in one pass over the ``input`` items (the positions of each kind,
every ``call_id`` and every ``id`` as sent) and memoised on the history
(:meth:`~proxy.core.history.CopyOnWrite.memo`), so that a clean history costs that one walk
plus the rules' lookups, as Messages' index and chat's ``Pairing`` are shared. What several
rules derive from it (the calls and outputs, which output answers which call) is memoised on
the history too (:mod:`.rules.facts`, :mod:`.rules.common`).

:meth:`Items.of <proxy.core.responses.items.Items.of>` walks the items once for both the
structural check and the index: when every item is an object with a string ``type``, the walk
proves what the check asks for (only the untyped items get its closer look).

A repair makes a new history object (copy-on-write). One that swaps some items
(:meth:`Index.replaced`) or moves runs of them (:meth:`Index.moved`) hands the index on,
updated for what changed, instead of the new history walking every item again: a repaired
request costs little more than a clean one.

An ordinary history is indexed by a fenced fast walk (:mod:`.fastwalk`), held to
:func:`walk`, its plain twin, by ``tests/core/responses/test_fastwalk.py``; it hands over
with the index what several rules would work out again from it (:meth:`Index.keys`,
:meth:`Index.lists`).

The index reads only the items, never the request or a rule's parameters. The rules' fast
exits (:data:`FAST`) return early where the index proves they find nothing; the test suite
compares them, and every carried index, with the rules and the index computed afresh
(``tests/core/responses/test_index.py``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proxy.core.responses.items import Items

#: The rules take the early exits the index proves safe (the property tests turn them off and
#: compare).
FAST = True

Item = dict[str, Any]
#: (old start, old end, new start) of each run of items a new history copied from an old one
#: (:meth:`~proxy.core.history.CopyOnWrite.edited`).
Runs = list[tuple[int, int, int]]
_NONE: list[int] = []


def kind(item: Item) -> str:
    """The item's type: its ``type``, else ``message`` (it has a role) or ``item_reference``."""
    value = item.get("type")
    if type(value) is str:
        return value
    return "message" if "role" in item else "item_reference"


@dataclass(frozen=True, slots=True)
class Index:
    """What one walk over a Responses history found. Read-only: rules never change it."""

    by_kind: dict[str, list[int]]  # the positions of the items of each kind, in order
    #: The ``call_id`` of every item sent with one, by position (looked up, never read in
    #: order: the fast walk's keeps its columns until asked, :class:`~.fastwalk.CallIds`).
    call_ids: Mapping[int, Any]
    ids: dict[int, Any]  # the ``id`` of every item sent with one, by position
    untyped: list[int]  # items without a string ``type`` (messages by their role, references)
    kind_set: frozenset[str] = field(init=False)  # the kinds present
    #: :meth:`positions` of several kinds, merged when first asked.
    _merged: dict[frozenset[str], list[int]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: What :meth:`keys` and :meth:`lists` found (made when asked, or handed over by the fast
    #: walk, :mod:`~proxy.core.responses.fastwalk`, which finds some in its loop; keyed by the
    #: method's name and its arguments).
    _found: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind_set", frozenset(self.by_kind))

    def of(self, kind: str) -> list[int]:
        """The positions of the items of ``kind``, in order (shared: do not mutate)."""
        return self.by_kind.get(kind, _NONE)

    def positions(self, wanted: frozenset[str]) -> list[int]:
        """The positions of the items whose kind is in ``wanted``, in order (shared)."""
        present = self.kind_set & wanted
        if len(present) <= 1:
            return self.by_kind[next(iter(present))] if present else _NONE
        merged = self._merged.get(present)
        if merged is None:  # no two kinds share a position: sorting merges the runs
            merged = sorted(chain.from_iterable(self.by_kind[k] for k in present))
            self._merged[present] = merged
        return merged

    def keys(self, wanted: frozenset[str]) -> list[Any]:
        """The ``call_id`` of each item whose kind is in ``wanted``, in order; KeyError when
        one has none (made once: the fast walk hands over those of function calls and their
        outputs)."""
        present = self.kind_set & wanted
        found = self._found.get(("keys", present))
        if found is None:
            found = _at(self.call_ids, self.positions(wanted))
            self._found[("keys", present)] = found
        return found

    def lists(self, items: list[Item], kind: str, key: str) -> list[int]:
        """The positions of the items of ``kind`` (in ``items``, this index's) whose ``key``
        is a list, in order (made once: the fast walk hands over the outputs holding parts)."""
        found = self._found.get(("lists", kind, key))
        if found is None:
            found = [i for i in self.of(kind) if type(items[i].get(key)) is list]
            self._found[("lists", kind, key)] = found
        return found

    @property
    def with_id(self) -> list[int]:
        """The positions of the items whose ``id`` is truthy, in order."""
        return sorted(i for i, value in self.ids.items() if value)

    def replaced(self, old: list[Item], new: list[Item], changed: Iterable[int]) -> Index:
        """The index of ``new``: ``old`` (this index's items) with the items at ``changed``
        swapped for others, every other position unchanged."""
        edit = _Edit(self)
        for i in changed:
            edit.remove(i, old[i])
            edit.add(i, new[i])
        return edit.done()

    def moved(self, old: list[Item], new: list[Item], runs: Runs) -> Index:
        """The index of ``new``: runs of ``old`` (this index's items) at new positions, items
        between the runs dropped and new items between them added."""
        edit = _Edit(self)
        for i in _gaps(((start, end) for start, end, _ in runs), len(old)):
            edit.remove(i, old[i])
        to = [0] * len(old)  # the new position of each old position kept
        for start, end, at in runs:
            to[start:end] = range(at, at + end - start)
        edit.renumber(to)
        for j in _gaps(((at, at + end - start) for start, end, at in runs), len(new)):
            edit.add(j, new[j])
        return edit.done()


class _Edit:
    """An index being carried to an edited history (copy-on-write: the lists and maps of the
    old index are copied before they change)."""

    def __init__(self, index: Index) -> None:
        self.by_kind = dict(index.by_kind)
        self.call_ids, self.ids = dict(index.call_ids.items()), dict(index.ids)
        self.untyped = list(index.untyped)
        self.copied: set[str] = set()

    def _own(self, k: str) -> list[int]:
        if k not in self.copied:
            self.copied.add(k)
            self.by_kind[k] = list(self.by_kind.get(k, _NONE))
        return self.by_kind[k]

    def remove(self, i: int, item: Item) -> None:
        if type(item) is not dict:
            return  # recorded nowhere (see _plain)
        found = self._own(kind(item))
        del found[bisect_left(found, i)]
        self.call_ids.pop(i, None)
        self.ids.pop(i, None)
        if type(item.get("type")) is not str:
            self.untyped.remove(i)

    def add(self, i: int, item: Item) -> None:
        if type(item) is not dict:
            return
        insort(self._own(kind(item)), i)
        if "call_id" in item:
            self.call_ids[i] = item["call_id"]
        if "id" in item:
            self.ids[i] = item["id"]
        if type(item.get("type")) is not str:
            insort(self.untyped, i)

    def renumber(self, to: list[int]) -> None:
        """Every position ``i`` becomes ``to[i]`` (after the dropped ones are removed)."""
        self.by_kind = {k: _mapped(to, found) for k, found in self.by_kind.items()}
        self.copied = set(self.by_kind)
        self.call_ids = _renumbered(to, self.call_ids)
        self.ids = _renumbered(to, self.ids)
        self.untyped = _mapped(to, self.untyped)

    def done(self) -> Index:
        by_kind = {k: found for k, found in self.by_kind.items() if found}
        return Index(by_kind, self.call_ids, self.ids, self.untyped)


def _mapped(to: list[int], positions: list[int]) -> list[int]:
    """``to[i] for i in positions``, built in C."""
    if len(positions) > 1:
        return list(itemgetter(*positions)(to))
    return [to[i] for i in positions]


def _at(keyed: Mapping[int, Any], positions: list[int]) -> list[Any]:
    """``keyed[i] for i in positions``, built in C; KeyError when one is missing."""
    if len(positions) > 1:
        return list(itemgetter(*positions)(keyed))
    return [keyed[i] for i in positions]


def _renumbered(to: list[int], by_position: dict[int, Any]) -> dict[int, Any]:
    return dict(zip(_mapped(to, list(by_position)), by_position.values(), strict=True))


def _gaps(spans: Iterable[tuple[int, int]], size: int) -> list[int]:
    """The positions in ``range(size)`` outside the ordered, disjoint ``[start, end)`` spans."""
    outside: list[int] = []
    covered = 0
    for start, end in chain(spans, [(size, size)]):
        outside += range(covered, start)
        covered = end
    return outside


def index_of(history: Items) -> Index:
    """The :class:`Index` of ``history`` (memoised on it)."""
    return history.memo("index", build)


def build(history: Items) -> Index:
    """One pass over the items of ``history`` (not memoised)."""
    return walk(history.messages) or _plain(history.messages)


def walk(items: list[Any]) -> Index | None:
    """The one pass; None when some item is not an object or has a ``type`` that is neither a
    string nor absent (:func:`_plain` indexes those; a request holding one is refused)."""
    by_kind: defaultdict[Any, list[int]] = defaultdict(list)
    call_ids: dict[int, Any] = {}
    ids: dict[int, Any] = {}
    try:
        for i, item in enumerate(items):
            by_kind[item.get("type")].append(i)
            if "call_id" in item:
                call_ids[i] = item["call_id"]
            if "id" in item:
                ids[i] = item["id"]
    except (AttributeError, TypeError):  # not an object (no .get), or an unhashable type
        return None
    untyped = by_kind.pop(None, _NONE)
    if not all(type(k) is str for k in by_kind):
        return None
    if not untyped:
        return Index(dict(by_kind), call_ids, ids, untyped)
    for i in untyped:
        by_kind[kind(items[i])].append(i)
    return Index({k: sorted(found) for k, found in by_kind.items()}, call_ids, ids, untyped)


def _plain(items: list[Any]) -> Index:
    """The index of items that are not all objects with string types, item by item."""
    by_kind: dict[str, list[int]] = {}
    call_ids: dict[int, Any] = {}
    ids: dict[int, Any] = {}
    untyped: list[int] = []
    for i, item in enumerate(items):
        if type(item) is not dict:
            continue  # no kind: no rule reads it (the request is refused before the rules)
        by_kind.setdefault(kind(item), []).append(i)
        if type(item.get("type")) is not str:
            untyped.append(i)
        if "call_id" in item:
            call_ids[i] = item["call_id"]
        if "id" in item:
            ids[i] = item["id"]
    return Index(by_kind, call_ids, ids, untyped)
