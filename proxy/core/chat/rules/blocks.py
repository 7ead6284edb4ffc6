"""Call blocks, and how the tool results of a history bind to its calls.

A **call block** is an assistant message with a non-empty ``tool_calls`` list followed by the
maximal run of consecutive ``tool`` messages. A history is **well paired** when no message
makes two calls with one id, every call is answered by exactly one tool message inside its own
block, and every tool message in a block answers a call of that block (order inside the block
is free): the rule every provider enforces (OpenAI O1-O4, DeepSeek D1-D2, Gemini G7). An id
may come back in a later block once its first call was answered (pydantic-ai, LiteLLM, Kimi's
``search_web:0``): each result binds to the call of its own block.

The pairing rules share :func:`well_paired` from here, a fast verdict that lets a clean history
skip them all, and :func:`~proxy.core.chat.rules.binding.analyse`, the one O(messages + calls)
pass that binds every result to its call when the verdict is no.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from proxy.core.chat import fast
from proxy.core.chat.messages import History, Message
from proxy.core.chat.rules import views


def calls_of(message: Message) -> list[Any] | None:
    """The ``tool_calls`` of an assistant message that opens a call block, else None."""
    calls = message.get("tool_calls")
    if type(calls) is list and calls and message["role"] == "assistant":
        return calls
    return None


def block_end(messages: list[Message], start: int) -> int:
    """Position of the last message of the tool run after ``start`` (``start`` if none)."""
    end = start
    while end + 1 < len(messages) and messages[end + 1]["role"] == "tool":
        end += 1
    return end


def result_id(message: Message) -> str | None:
    """A tool message's ``tool_call_id`` when it is a non-empty string."""
    value = message.get("tool_call_id")
    return value if type(value) is str and value else None


def well_paired(history: History) -> bool:
    """True when the history is well paired (see the module docstring).

    Memoised per history: five pairing detectors ask in turn about the same clean history.
    """
    return history.memo("well_paired", _check)


def _check(history: History) -> bool:
    # Runs on every request with tool traffic: no per-block Python loop, and the usual case
    # (results in call order) compared as one list.
    index = history.index
    callers, tools = index.callers, index.tools
    if not callers:
        return not tools
    ids = _ids_in_place(history)
    answers = None if ids is None else index.answer_ids
    if ids is None or answers is None:  # (None answers: a result without an id)
        return False
    try:
        unique = len(set(ids)) == len(ids)
        if answers == ids:  # each result right where its call's is: ids need only be unique
            return unique or _unique_per_block(index.call_lists, ids)  # per message
        if unique:
            return _same_blocks(callers, index.call_lists, ids, answers)
        return _unique_per_block(index.call_lists, ids) and _same_per_block(
            index.call_lists, ids, answers
        )
    except TypeError:  # an unhashable id of a result
        return False


def _spans(call_lists: list[Any]) -> list[tuple[int, int]]:
    """``(start, end)`` of each message's calls in the flat list of every call."""
    return list(pairwise(fast.offsets(call_lists)))


def _unique_per_block(call_lists: list[Any], ids: list[str]) -> bool:
    """Whether no message makes two calls with one id (ids may repeat across messages)."""
    return all(len(set(ids[a:b])) == b - a for a, b in _spans(call_lists))


def _same_per_block(call_lists: list[Any], ids: list[str], answers: list[Any]) -> bool:
    """Whether each block's results answer exactly its calls (in any order), block by block:
    the slow form of :func:`_same_blocks` for ids that repeat across messages."""
    return all(sorted(answers[a:b]) == sorted(ids[a:b]) for a, b in _spans(call_lists))


def _ids_in_place(history: History) -> list[str] | None:
    """The call ids (non-empty strings) when the results fill exactly the calls' blocks.

    That is, when the k-th call's result sits inside the k-th call's block, counting in order.
    """
    index = history.index
    if not index.regular or index.empty_call_list:
        return None
    facts = views.call_facts(history)
    if facts is not None:
        return facts.ids if facts.spots == index.tools else None
    if fast.spots(index.callers, index.call_lists) != index.tools:
        return None
    return views.string_ids(history)


def _same_blocks(callers: list[int], lists: list[Any], ids: list[Any], answers: list[Any]) -> bool:
    """Whether each result answers a call of the block it sits in (results in any order)."""
    owners = fast.owners(callers, lists)
    owner_of = dict(zip(ids, owners, strict=True))
    return len(set(answers)) == len(answers) and [owner_of.get(a) for a in answers] == owners
