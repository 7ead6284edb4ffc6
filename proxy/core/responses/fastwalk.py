"""The Responses index of an ordinary history, built with fewer steps per item (a fenced fast
path: its plain twin is :func:`proxy.core.responses.index.walk`).

The walk that checks and indexes the ``input`` items is the one Python-level loop over every
item of every request (issue 34: over half of a clean Responses body's check). This walk does
less for the items clients send most (``function_call``, ``function_call_output``,
``message``): it compares the type with each of those three names instead of hashing it into
a dict of lists, and reads a call's or an output's ``call_id`` with ``[]`` into a column, each
kind's own (a missing key raises, instead of being tested). What the rules would otherwise
each work out again from the index it hands over with it, found in the same loop: the
``call_id`` columns of the calls and outputs (the tool facts', :mod:`.rules.facts`) and which
outputs hold a list (the content rule's, :mod:`.rules.content`). The index's ``call_ids`` by
position stay those columns (:class:`CallIds`) until an item is looked up: a clean history's
rules only ask how many there are, and a dict made of them costs a tenth of the walk.

Anything out of the ordinary (an item that is no object, a type neither a string nor absent,
a call or output without ``call_id``, an output without ``output``) is left to the plain
walk: :func:`walked` answers None
and the caller walks the history again the plain way, which says what is wrong or indexes
the unusual items. So this walk never has to be right about an unusual history, only to know
that it is one; ``tests/core/responses/test_fastwalk.py`` holds it to the plain walk (and to
what the plain index finds when asked) on ordinary and broken histories.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping
from typing import Any

from proxy.core.responses.index import Index, kind

#: What the walk hands over, as :meth:`Index.keys` and :meth:`Index.lists` would find it.
_CALL_KEYS = ("keys", frozenset({"function_call"}))
_OUTPUT_KEYS = ("keys", frozenset({"function_call_output"}))
_LISTED = ("lists", "function_call_output", "output")


def walked(items: list[Any]) -> Index | None:
    """The index :func:`~proxy.core.responses.index.walk` makes of ``items``, when they are
    ordinary; None when the plain walk must look."""
    try:
        return _walk(items)
    except (AttributeError, KeyError, TypeError):  # no object (no .get), no call_id, odd type
        return None


def _walk(items: list[Any]) -> Index:
    calls: list[int] = []
    outputs: list[int] = []
    messages: list[int] = []
    call_keys: list[Any] = []
    output_keys: list[Any] = []
    listed: list[int] = []  # the outputs whose ``output`` is a list of parts
    ids: dict[int, Any] = {}
    keyed: dict[int, Any] = {}  # the call_id of every other item sent with one
    others: dict[Any, list[int]] = {}  # the other kinds' positions (None: untyped items)
    for i, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            calls.append(i)
            call_keys.append(item["call_id"])
            if "id" in item:
                ids[i] = item["id"]
        elif kind == "function_call_output":
            outputs.append(i)
            output_keys.append(item["call_id"])
            if type(item["output"]) is list:
                listed.append(i)
            if "id" in item:
                ids[i] = item["id"]
        elif kind == "message":
            messages.append(i)
            if "id" in item:
                ids[i] = item["id"]
            if "call_id" in item:
                keyed[i] = item["call_id"]
        else:
            _other(i, item, kind, others, ids=ids, keyed=keyed)
    untyped = others.pop(None, [])
    typed = {"function_call": calls, "function_call_output": outputs, "message": messages}
    by_kind = _by_kind({**typed, **others}, untyped, items)
    call_ids = CallIds((calls, call_keys), (outputs, output_keys), (list(keyed), [*keyed.values()]))
    found = {_CALL_KEYS: call_keys, _OUTPUT_KEYS: output_keys, _LISTED: listed}
    return Index(by_kind, call_ids, ids, untyped, _found=found)


def _other(
    i: int,
    item: Any,
    kind: Any,
    others: dict[Any, list[int]],
    *,
    ids: dict[int, Any],
    keyed: dict[int, Any],
) -> None:
    """An item of another kind (a string), or untyped (None), recorded as the plain walk
    records it; a type of any other value is left to the plain walk."""
    if kind is not None and type(kind) is not str:
        raise TypeError(kind)
    if kind in others:
        others[kind].append(i)
    else:
        others[kind] = [i]
    if "call_id" in item:
        keyed[i] = item["call_id"]
    if "id" in item:
        ids[i] = item["id"]


def _by_kind(
    found: dict[str, list[int]], untyped: list[int], items: list[Any]
) -> dict[str, list[int]]:
    """The positions of each kind, the kinds in the plain walk's order: the typed ones by
    their first item, then those only untyped items have (a message or a reference)."""
    by_kind = {k: positions for k, positions in found.items() if positions}
    if len(by_kind) > 1:
        by_kind = dict(sorted(by_kind.items(), key=_first_place))
    if not untyped:
        return by_kind
    for i in untyped:
        by_kind.setdefault(kind(items[i]), []).append(i)
    return {k: sorted(positions) for k, positions in by_kind.items()}


def _first_place(entry: tuple[str, list[int]]) -> int:
    return entry[1][0]


class CallIds(Mapping[int, Any]):
    """:attr:`Index.call_ids` as the walk found them: columns of positions and their
    ``call_id``, made a dict only when an item is looked up (a repair's index carried over).
    Its order is the columns', not the plain walk's by position: no one reads it in order."""

    __slots__ = ("_columns", "_made")

    def __init__(self, *columns: tuple[list[int], list[Any]]) -> None:
        self._columns = columns  # (positions, call_ids); no position in two columns
        self._made: dict[int, Any] | None = None

    def __len__(self) -> int:
        return sum(len(positions) for positions, _ in self._columns)

    def __getitem__(self, i: int) -> Any:
        return self._dict()[i]

    def __iter__(self) -> Iterator[int]:
        return iter(self._dict())

    def items(self) -> ItemsView[int, Any]:
        """The dict's own view (the Mapping's would look each position up in Python)."""
        return self._dict().items()

    def _dict(self) -> dict[int, Any]:
        if self._made is None:
            made: dict[int, Any] = {}
            for positions, keys in self._columns:
                made.update(zip(positions, keys, strict=True))
            self._made = made  # by kind, then position: only looked up, never listed
        return self._made
