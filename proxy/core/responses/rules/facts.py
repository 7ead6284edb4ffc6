"""What the call rules need to know about a history's calls and outputs, computed once.

Read from the history's :class:`~proxy.core.responses.index.Index` and memoised on the history
(:meth:`~proxy.core.history.CopyOnWrite.memo`), so that the detectors of a clean history share
one look at its calls and outputs (``call_id`` format, duplicates, pairing) and each proves
"nothing to find" from it before any per-item scan. The facts are None when the history is
irregular: the detectors then run their exact scans.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from proxy.core.responses.items import CALLS, OUTPUTS, Items

#: Kinds whose role in the pairing depends on more than their kind: ``tool_search_*`` on their
#: ``execution``, a legacy ``local_shell_call_output`` keyed by ``id`` instead of ``call_id``.
_AMBIGUOUS = frozenset({"tool_search_call", "tool_search_output", "local_shell_call_output"})


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """The calls and outputs of a regular history.

    Regular: no kind in ``_AMBIGUOUS``, every call and output has a non-empty string
    ``call_id`` (so every call needs an output and every output answers a call, and
    ``call_key`` is the ``call_id``), and no other item has a ``call_id``.
    """

    calls: list[int]  # the positions of the calls, in order
    outputs: list[int]  # the positions of the outputs, in order
    call_keys: list[str]  # the call_id of each call
    output_keys: list[str]  # the call_id of each output
    called: AbstractSet[str]  # the call_ids of the calls
    answered: AbstractSet[str]  # the call_ids of the outputs
    longest: int  # the length of the longest call_id
    distinct: bool  # no two calls share a call_id, nor two outputs
    in_order: bool  # the outputs' call_ids are the calls', in the same order


def tool_facts(history: Items) -> ToolFacts | None:
    """The :class:`ToolFacts` of the history, or None when it is irregular."""
    return history.memo("tool_facts", _tool_facts)


def _tool_facts(history: Items) -> ToolFacts | None:
    index = history.index
    if not index.kind_set.isdisjoint(_AMBIGUOUS):
        return None
    calls, outputs = index.positions(CALLS), index.positions(OUTPUTS)
    if len(index.call_ids) != len(calls) + len(outputs):
        return None  # a call or output without a call_id, or another item with one
    try:
        call_keys, output_keys = index.keys(CALLS), index.keys(OUTPUTS)
        in_order = output_keys == call_keys  # (most histories answer their calls in order)
        called = answered = set(call_keys)
        if not in_order:
            answered = set(output_keys)
        # Every key hashes (a set holds it) and has a length: a JSON string, no other value.
        longest = max(map(len, called), default=0)
        if answered is not called:
            longest = max(longest, max(map(len, answered), default=0))
    except (KeyError, TypeError):
        return None  # a call or output without a call_id, or one that is not a string
    if "" in called or "" in answered:
        return None
    distinct = len(called) == len(call_keys) and len(answered) == len(output_keys)
    columns = (calls, outputs, call_keys, output_keys)
    return ToolFacts(*columns, called, answered, longest, distinct, in_order)


def distinct_ids(history: Items) -> bool:
    """Whether every item ``id`` is a string used once (items without one do not count)."""
    return history.memo("distinct_ids", _distinct_ids)


def _distinct_ids(history: Items) -> bool:
    ids = list(filter(None, history.index.ids.values()))
    return set(map(type, ids)) <= {str} and len(set(ids)) == len(ids)
