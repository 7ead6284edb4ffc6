"""Call blocks, and how the tool results of a history bind to its calls.

A **call block** is an assistant message with a non-empty ``tool_calls`` list followed by the
maximal run of consecutive ``tool`` messages. A history is **well paired** when no message
makes two calls with one id, every call is answered by exactly one tool message inside its own
block, and every tool message in a block answers a call of that block (order inside the block
is free): the rule every provider enforces (OpenAI O1-O4, DeepSeek D1-D2, Gemini G7). An id
may come back in a later block once its first call was answered (pydantic-ai, LiteLLM, Kimi's
``search_web:0``): each result binds to the call of its own block.

The pairing rules share two things from here: :func:`well_paired`, a fast verdict that lets a
clean history skip them all, and :func:`analyse`, the one O(messages + calls) pass that binds
every result to its call when the verdict is no.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from proxy.core.chat import fast
from proxy.core.chat.messages import History, Message
from proxy.core.chat.rules import views

Key = tuple[int, str]  # (position of the call block's assistant message, call id)


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
    if ids is None:
        return False
    try:
        answers = fast.values(index.tool_messages, "tool_call_id")
        unique = len(set(ids)) == len(ids)
        if answers == ids:  # each result right where its call's is: ids need only be unique
            return unique or _unique_per_block(index.call_lists, ids)  # per message
        if unique:
            return _same_blocks(callers, index.call_lists, ids, answers)
        return _unique_per_block(index.call_lists, ids) and _same_per_block(
            index.call_lists, ids, answers
        )
    except (TypeError, KeyError):  # a result without an id, or an unhashable one
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
    if not index.regular or [] in index.call_lists:
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


@dataclass(slots=True)
class Pairing:
    """Where each call is and what answers it.

    ``results`` maps a call (its block and id) to the positions of the tool messages bound to
    it, in history order: those in its block, and ``misplaced`` ones from elsewhere. ``answered``
    counts only the ones inside the block.
    """

    calls: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # id -> (pos, j)
    #: id -> pos instead of ``calls`` when every id is its own (the usual history: built in C).
    owner: dict[str, int] | None = None
    capacity: dict[Key, int] = field(default_factory=dict)  # calls with that id in that block
    results: dict[Key, list[int]] = field(default_factory=dict)
    answered: dict[Key, int] = field(default_factory=dict)
    misplaced: list[tuple[int, int]] = field(default_factory=list)  # (tool pos, block pos)
    orphans: list[int] = field(default_factory=list)


def analyse(history: History) -> Pairing:
    """Bind every tool message of ``history`` to a call, in one pass over its tool traffic;
    computed once per history, shared by the pairing rules (read-only)."""
    return history.memo("pairing", _analyse)


def _analyse(history: History) -> Pairing:
    # It runs on every history that is not well paired, so on every turn of a conversation that
    # broke once (issue 23): the usual such history (each call answered right at its spot, a few
    # tool messages besides) binds in C, and only those few go through the loop.
    pairing = Pairing()
    openers, owners = _calls_into(pairing, history)
    tools = None if owners is None else _bound_at_spots(pairing, history, owners)
    if tools is None:
        tools = history.index.tools
    _bind_runs(pairing, history, openers, tools)
    fast.sort_each(pairing.results.values())
    return pairing


def _bound_at_spots(pairing: Pairing, history: History, owners: list[int]) -> list[int] | None:
    """Bind the result at each call's spot (the k-th position after its message) when every
    spot holds its own call's result; the tool messages left to bind, or None (nothing bound)
    when some spot does not. Each call is then answered inside its block, exactly as the loop
    of :func:`_bind_runs` would find: a call's block is all spots, so its run starts right
    after it, and no other tool message of the run precedes the spots."""
    index, facts = history.index, views.call_facts(history)
    if facts is None:
        return None
    tools = set(index.tools)
    if not tools.issuperset(facts.spots):
        return None
    try:
        if fast.values(fast.at(history.messages, facts.spots), "tool_call_id") != facts.ids:
            return None
    except KeyError:  # a result without an id
        return None
    # Every key of ``capacity`` (in call order, one call each) is answered once, at its spot.
    pairing.answered.update(pairing.capacity)
    pairing.results.update(zip(pairing.capacity, fast.singletons(facts.spots), strict=True))
    return fast.without(index.tools, set(facts.spots))


def _bind_runs(pairing: Pairing, history: History, openers: set[int], tools: list[int]) -> None:
    """Bind the tool messages at ``tools`` (all of them, or those :func:`_bound_at_spots` left):
    in-block results first; a result elsewhere only takes a call its own block left open."""
    messages = history.messages
    capacity, answered, results = pairing.capacity, pairing.answered, pairing.results
    elsewhere = []
    block: int | None = None
    previous = -2
    for t in tools:
        if t != previous + 1:  # a new run of tool messages: its block is the message before it
            start = t
            while start > 0 and messages[start - 1]["role"] == "tool":
                start -= 1  # only when tools skips some: the run began before t
            block = start - 1 if start - 1 in openers else None
        previous = t
        rid = messages[t].get("tool_call_id")
        if type(rid) is not str or not rid:
            rid = None
        elif block is not None and (block, rid) in capacity:
            key = (block, rid)
            if key in results:
                answered[key] += 1
                results[key].append(t)
            else:
                answered[key] = 1
                results[key] = [t]
            continue
        elsewhere.append((t, rid))
    for t, rid in elsewhere:
        _bind(pairing, messages, t, rid)


def _calls_into(pairing: Pairing, history: History) -> tuple[set[int], list[int] | None]:
    """Fill ``pairing.calls`` and ``pairing.capacity``; the positions of the messages that
    open a call block, and the opener of each call when every call is well formed and every
    id its own (None otherwise)."""
    index, facts = history.index, views.call_facts(history)
    if facts is not None and len(set(facts.ids)) == len(facts.ids):
        # Every call well formed, every id its own: the same maps, built in C.
        owners = fast.owners(index.callers, index.call_lists)  # read only
        pairing.owner = dict(zip(facts.ids, owners, strict=True))
        pairing.capacity.update(dict.fromkeys(zip(owners, facts.ids, strict=True), 1))
        return set(owners), owners  # the callers that make a call
    messages = history.messages
    calls_by_id, capacity = pairing.calls, pairing.capacity
    openers = set()
    for c in history.index.callers:
        message = messages[c]
        calls = message["tool_calls"]
        if type(calls) is not list or not calls or message["role"] != "assistant":
            continue
        openers.add(c)
        for j, call in enumerate(calls):
            cid = call.get("id") if type(call) is dict else None
            if type(cid) is str and cid:
                if cid in calls_by_id:
                    calls_by_id[cid].append((c, j))
                else:
                    calls_by_id[cid] = [(c, j)]
                key = (c, cid)
                capacity[key] = capacity.get(key, 0) + 1
    return openers, None


def _bind(pairing: Pairing, messages: list[Message], t: int, rid: str | None) -> None:
    """Bind a result outside its call's block: to the nearest call with its id before it, or
    else the first after it. When that call's block already holds its answer and this result
    says something else, it answers a call the history lost (Kimi's ids repeat across turns
    and clients drop the repeated call, B1): an orphan, never that other call's result (moving
    it in would pair it with the wrong call, and deduplication would drop one of the two)."""
    key = _call_of(pairing, t, rid)
    if key is None:
        pairing.orphans.append(t)
        return
    answers = pairing.results.get(key, [])
    full = pairing.answered.get(key, 0) >= pairing.capacity[key]
    content = messages[t].get("content")
    if full and all(messages[a].get("content") != content for a in answers):
        pairing.orphans.append(t)
        return
    pairing.misplaced.append((t, key[0]))
    pairing.results.setdefault(key, []).append(t)


def _call_of(pairing: Pairing, t: int, rid: str | None) -> Key | None:
    """The call a result at ``t`` outside its block binds to, if any has its id."""
    if rid is None:
        return None
    if pairing.owner is not None:
        caller = pairing.owner.get(rid)
        return None if caller is None else (caller, rid)
    sites = pairing.calls.get(rid)
    if sites is None:
        return None
    k = bisect_left(sites, t, key=_position)
    return (sites[k - 1][0] if k else sites[0][0], rid)


def _position(site: tuple[int, int]) -> int:
    return site[0]
