"""How the tool results of a history bind to its calls (:func:`analyse`), when it is not well
paired (:func:`~proxy.core.chat.rules.blocks.well_paired`; see :mod:`.blocks` for the terms).

The one O(messages + calls) pass the pairing rules share: every result bound to a call, or
found misplaced or orphaned.
"""

from __future__ import annotations

from bisect import bisect_left

from proxy.core.chat import fast
from proxy.core.chat.messages import History, Message
from proxy.core.chat.rules import views

Key = tuple[int, str]  # (position of the call block's assistant message, call id)


class Pairing:
    """Where each call is and what answers it.

    ``results`` maps a call (its block and id) to the positions of the tool messages bound to
    it, in history order: those in its block, and ``misplaced`` ones from elsewhere. ``answered``
    counts only the ones inside the block.

    When every call is answered right at its spot (:attr:`at_spots`: the usual history that is
    not well paired, a few tool messages besides), the maps hold only the calls those few bind
    to, and the full ones are built on first read: the pairing rules ask for the few, and a
    repair makes a new history before anything reads the rest (issue 34).
    """

    __slots__ = (
        "_answered",
        "_capacity",
        "_results",
        "_spots",
        "calls",
        "misplaced",
        "orphans",
        "owner",
    )

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[int, int]]] = {}  # id -> (pos, j)
        #: id -> pos instead of ``calls`` when every id is its own (the usual history: built in C).
        self.owner: dict[str, int] | None = None
        self._capacity: dict[Key, int] = {}  # calls with that id in that block
        self._results: dict[Key, list[int]] = {}
        self._answered: dict[Key, int] = {}
        self.misplaced: list[tuple[int, int]] = []  # (tool pos, block pos)
        self.orphans: list[int] = []
        #: (owners, ids, spots) of every call when each is answered at its spot; the maps then
        #: hold only the calls the other tool messages bind to (see :attr:`at_spots`).
        self._spots: tuple[list[int], list[str], list[int]] | None = None

    @property
    def at_spots(self) -> bool:
        """Whether every call was answered right at its spot, each id its own: then no call lacks
        a result, and only the calls in :meth:`crowded` have more than one."""
        return self._spots is not None

    @property
    def capacity(self) -> dict[Key, int]:
        return self._full()._capacity

    @property
    def results(self) -> dict[Key, list[int]]:
        return self._full()._results

    @property
    def answered(self) -> dict[Key, int]:
        return self._full()._answered

    def crowded(self) -> list[tuple[Key, list[int]]]:
        """The calls bound to more than one result, with them (in no promised order)."""
        found = self._results if self._spots is not None else self.results
        return [(key, where) for key, where in found.items() if len(where) > 1]

    def capacity_of(self, key: Key) -> int:
        """How many calls of one block share the id of ``key`` (a call bound to results)."""
        return self._capacity[key] if key in self._capacity else self.capacity[key]

    def _full(self) -> Pairing:
        """This pairing with every call in its maps (those of :attr:`at_spots` built now: one
        each, answered once at its spot, then the few the other tool messages bind to)."""
        if self._spots is None:
            return self
        owners, ids, spots = self._spots
        keys = list(zip(owners, ids, strict=True))
        capacity = dict.fromkeys(keys, 1)
        answered = dict(capacity)
        results = dict(zip(keys, fast.singletons(spots), strict=True))
        answered.update(self._answered)
        results.update(self._results)
        self._capacity, self._answered, self._results = capacity, answered, results
        self._spots = None
        return self


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
        if owners is not None:  # every id its own, but not every call answered at its spot
            ids = pairing.owner or {}  # in call order: each id once
            pairing._capacity = dict.fromkeys(zip(owners, ids, strict=True), 1)
        tools = history.index.tools
    _bind_runs(pairing, history, openers, tools)
    fast.sort_each(pairing._results.values())
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
    left = set(index.tools)
    left.difference_update(facts.spots)  # the spots are distinct: all of them were tools?
    if len(index.tools) - len(left) != len(facts.spots):
        return None
    try:
        if fast.values(fast.at(history.messages, facts.spots), "tool_call_id") != facts.ids:
            return None
    except KeyError:  # a result without an id
        return None
    pairing._spots = (owners, facts.ids, facts.spots)
    tools = sorted(left)
    _open(pairing, history.messages, tools, facts.ids, facts.spots)
    return tools


def _open(
    pairing: Pairing, messages: list[Message], tools: list[int], ids: list[str], spots: list[int]
) -> None:
    """Put in the maps, as answered at their spots, the calls the tool messages at ``tools``
    name: the only ones :func:`_bind_runs` and :func:`_bind` can bind them to (every key of
    a call is ``(owner of its id, id)``)."""
    owner = pairing.owner or {}
    spot_of: dict[str, int] | None = None
    for t in tools:
        rid = messages[t].get("tool_call_id")
        if type(rid) is not str or rid not in owner:
            continue
        key = (owner[rid], rid)
        if key not in pairing._capacity:
            if spot_of is None:
                spot_of = dict(zip(ids, spots, strict=True))
            pairing._capacity[key] = pairing._answered[key] = 1
            pairing._results[key] = [spot_of[rid]]


def _bind_runs(pairing: Pairing, history: History, openers: set[int], tools: list[int]) -> None:
    """Bind the tool messages at ``tools`` (all of them, or those :func:`_bound_at_spots` left):
    in-block results first; a result elsewhere only takes a call its own block left open."""
    messages = history.messages
    capacity, answered, results = pairing._capacity, pairing._answered, pairing._results
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
        # The capacity map (each call's, 1) is built only when not every call is answered at its
        # spot (:func:`_analyse`; :class:`Pairing` builds it on demand otherwise).
        pairing.owner = dict(zip(facts.ids, owners, strict=True))
        return set(owners), owners  # the callers that make a call
    messages = history.messages
    calls_by_id, capacity = pairing.calls, pairing._capacity
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
    answers = pairing._results.get(key, [])
    full = pairing._answered.get(key, 0) >= pairing._capacity[key]
    content = messages[t].get("content")
    if full and all(messages[a].get("content") != content for a in answers):
        pairing.orphans.append(t)
        return
    pairing.misplaced.append((t, key[0]))
    pairing._results.setdefault(key, []).append(t)


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
