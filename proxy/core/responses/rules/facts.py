"""What the call rules need to know about a history's calls and outputs, computed once.

Memoised on the history (:meth:`~proxy.core.history.CopyOnWrite.memo`), so that the detectors
of a clean history share one C-level look at its calls and outputs (``call_id`` format,
duplicates, pairing) and each proves "nothing to find" from it before any per-item scan. The
facts are None when the history is irregular: the detectors then run their exact scans.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.core.responses.items import CALLS, OUTPUTS, Items, at, values

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
    longest: int  # the length of the longest call_id
    distinct: bool  # no two calls share a call_id, nor two outputs


def tool_facts(history: Items) -> ToolFacts | None:
    """The :class:`ToolFacts` of the history, or None when it is irregular."""
    return history.memo("tool_facts", _tool_facts)


def _tool_facts(history: Items) -> ToolFacts | None:
    if not history.kind_set.isdisjoint(_AMBIGUOUS):
        return None
    calls, outputs = history.positions(CALLS), history.positions(OUTPUTS)
    keys = values(history.messages, "call_id")
    call_keys, output_keys = at(keys, calls), at(keys, outputs)
    tool_keys = call_keys + output_keys
    if not set(map(type, tool_keys)) <= {str} or "" in tool_keys:
        return None
    if keys.count(None) != len(keys) - len(tool_keys):  # another item has a call_id
        return None
    distinct = len(set(call_keys)) == len(call_keys) and len(set(output_keys)) == len(output_keys)
    longest = max(map(len, tool_keys), default=0)
    return ToolFacts(calls, outputs, call_keys, output_keys, longest, distinct)


def distinct_ids(history: Items) -> bool:
    """Whether every item ``id`` is a string used once (items without one do not count)."""
    return history.memo("distinct_ids", _distinct_ids)


def _distinct_ids(history: Items) -> bool:
    ids = values(at(history.messages, history.with_id), "id")
    return set(map(type, ids)) <= {str} and len(set(ids)) == len(ids)
