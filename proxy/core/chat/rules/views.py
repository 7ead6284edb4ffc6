"""Facts about a history that several fast paths need, computed once per history.

Memoised on the history (:meth:`~proxy.core.chat.messages.History.memo`), so that the detectors of a
clean history share one walk over its calls (:func:`call_facts`: tool_call_shape, the arguments
rules, the pairing verdict, tool_call_id_format, unknown_message_field) and one look at its odd
contents (:func:`odd_roles`, :func:`odd_types`: the content rules). A view is None when the
history is irregular (see :attr:`Index.regular`) or some call lacks what the
view reads: the detectors then fall back to their exact per-message scans, which never raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.core.chat import fast
from proxy.core.chat.index import CallFacts
from proxy.core.chat.messages import History, Message


def call_facts(history: History) -> CallFacts | None:
    """The :class:`CallFacts` of the history, or None when some call is not well formed."""
    return history.memo("call_facts", _call_facts)


def _call_facts(history: History) -> CallFacts | None:
    # One Python pass that touches each call once beats a C-level map per fact: the calls are
    # scattered over the heap, and each extra pass over them pays the cache misses again.
    index = history.index
    if not index.regular:
        return None
    ids: list[str] = []
    spots: list[int] = []
    arguments: list[Any] = []
    strings = plain = True
    try:
        for caller, calls in zip(index.callers, index.call_lists, strict=True):
            spot = caller
            for call in calls:
                function = call["function"]
                cid, name = call["id"], function["name"]
                if type(cid) is not str or type(name) is not str or type(call["type"]) is not str:
                    return None
                if not cid or not name:
                    return None
                value = function["arguments"]
                if type(value) is not str:
                    strings = False
                if len(call) != 3 or len(function) != 2:
                    plain = False
                ids.append(cid)
                arguments.append(value)
                spot += 1
                spots.append(spot)
    except (KeyError, TypeError):  # a call or function that is no object, or lacks a key
        return None
    return CallFacts(ids, spots, arguments, strings, plain)


def call_ids(history: History) -> list[Any] | None:
    """The ``id`` of every call; None unless every call is an object with an ``id``."""
    return history.memo("call_ids", _call_ids)


def string_ids(history: History) -> list[str] | None:
    """:func:`call_ids` when every id is a non-empty string, else None."""
    return history.memo("string_ids", _string_ids)


def functions(history: History) -> list[Any] | None:
    """The ``function`` of every call; None unless every call is an object with one."""
    return history.memo("functions", _functions)


def arguments(history: History) -> list[Any] | None:
    """``function.arguments`` of every call; None unless every call has them."""
    return history.memo("arguments", _arguments)


def call_keys(history: History) -> frozenset[str] | None:
    """The union of the keys of every call; None unless every call is an object with an id."""
    return history.memo("call_keys", _call_keys)


def function_keys(history: History) -> frozenset[Any] | None:
    """The union of what iterating every ``function`` yields (its keys, for an object)."""
    return history.memo("function_keys", _function_keys)


def _call_ids(history: History) -> list[Any] | None:
    calls = history.index.calls
    try:
        return None if calls is None else fast.values(calls, "id")
    except (KeyError, TypeError):  # a call that is no object, or has no id
        return None


def _string_ids(history: History) -> list[str] | None:
    facts = call_facts(history)
    if facts is not None:
        return facts.ids
    ids = call_ids(history)
    return ids if ids is not None and fast.filled_strings(ids) else None


def _functions(history: History) -> list[Any] | None:
    calls = history.index.calls
    try:
        return None if calls is None else fast.values(calls, "function")
    except (KeyError, TypeError):
        return None


def _arguments(history: History) -> list[Any] | None:
    found = functions(history)
    try:
        return None if found is None else fast.values(found, "arguments")
    except (KeyError, TypeError):
        return None


def _call_keys(history: History) -> frozenset[str] | None:
    if call_ids(history) is None:
        return None  # some call is no object: the union of its items would mean nothing
    return fast.union(history.index.calls or ())


def _function_keys(history: History) -> frozenset[Any] | None:
    found = functions(history)
    try:
        return None if found is None else fast.union(found)
    except TypeError:  # a function that is not iterable
        return None


# The odd views answer at once, unmemoised, when no content is odd (a chat of plain text turns,
# every content a non-empty string): memoising and computing them costs a small request more
# than the look at the index.


def odd_roles(history: History) -> list[str]:
    """The roles of the messages with odd content (missing, null, empty or not a string).

    A list, for ``in`` tests: a role fresh from the JSON parser has no cached hash.
    """
    if not history.index.odd_content:
        return []
    return history.memo("odd_roles", _odd_roles)


def odd_types(history: History) -> frozenset[type]:
    """The types of the odd contents (``NoneType`` for a missing one; ``str`` means ``""``)."""
    if not history.index.odd_content:
        return _NO_TYPES
    return history.memo("odd_types", _odd_types)


def odd_contents(history: History) -> list[Any]:
    """The odd contents, in order (None for a missing one)."""
    if not history.index.odd_content:
        return []
    return history.memo("odd_contents", _odd_contents)


def odd_messages(history: History) -> Sequence[Message]:
    if not history.index.odd_content:
        return []
    return history.memo("odd_messages", _odd_messages)


_NO_TYPES: frozenset[type] = frozenset()


def _odd_messages(history: History) -> Sequence[Message]:
    return fast.at(history.messages, history.index.odd_content)


def _odd_contents(history: History) -> list[Any]:
    return fast.gets(odd_messages(history), "content")


def _odd_roles(history: History) -> list[str]:
    return fast.values(odd_messages(history), "role")


def _odd_types(history: History) -> frozenset[type]:
    return fast.types(odd_contents(history))


def odd_only_on_call_turns(history: History) -> bool:
    """Whether the odd messages are exactly the callers, all assistant messages making calls.

    The usual case of an agent history: content null (or missing, or ``""``) only on the
    assistant tool-call turns.
    """
    index = history.index
    return index.odd_content == index.callers and index.regular and not index.empty_call_list


def nulls_only_on_call_turns(history: History) -> bool:
    """Whether every null or missing content is on an assistant message making calls (the
    odd messages may include others, with ``""`` or parts: an assistant turn that lost its
    calls keeps its ``""``, and the upstream's null rules have nothing to say about it)."""
    index = history.index
    if odd_only_on_call_turns(history):
        return True
    if not index.regular or index.empty_call_list:
        return False
    nulls = fast.where_none(index.odd_content, odd_contents(history))
    return set(index.callers).issuperset(nulls)
