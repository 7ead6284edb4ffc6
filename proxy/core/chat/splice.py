"""Carrying a history's views through an edit, so a repair does not pay for a second analysis.

A pairing repair (``insert_after``: salvage an orphan result, move a misplaced one, synthesize a
missing one) changes one or two messages of a long history, and the rules after it, and the
fixpoint's next pass, then look at the new history: the one-pass :class:`Index` and the call
facts (:func:`~proxy.core.chat.rules.views.call_facts`) were computed again from scratch, a walk
over every message and every call, half the cost of a clean check (issue 23).

:meth:`~proxy.core.history.CopyOnWrite.edited` builds the new history from runs of the old one,
copied as slices, and the items it inserts. The index of the new one is the old one's positions,
run by run, shifted (found by bisection, shifted in C), plus what the inserted items are; the
call facts carry over whole when every message that makes calls kept its place in a run (their
ids and arguments are the same lists, only the positions their results belong at shift). Both
are what a fresh pass would find, exactly (``tests/core/chat/test_splice.py`` compares them with
one after random edits and after every repair of the golden cases and of broken histories).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable, Sequence

from proxy.core.chat import fast
from proxy.core.chat.fast import cached
from proxy.core.chat.index import CallFacts, Index, Message
from proxy.core.history import CopyOnWrite

#: (old start, old end, new start): the old items ``[start, end)`` sit from ``new start`` on.
Run = tuple[int, int, int]

#: The lazily computed views of an index that depend only on its callers (carried when the
#: callers are the same messages, in the same order).
_CALLER_VIEWS = ("caller_messages", "call_lists", "regular", "calls")
#: The roles an index pass groups first, in this order (the others follow by first appearance).
_USUAL = ("tool", "assistant", "user")
#: The history's views of its odd contents (:mod:`~proxy.core.chat.rules.views`): carried when
#: the odd messages are the same, at the same positions.
_ODD_VIEWS = ("odd_messages", "odd_contents", "odd_roles", "odd_types")


def carry(index: Index, old: CopyOnWrite, new: CopyOnWrite, runs: Sequence[Run]) -> Index:
    """The index of ``new`` (``old``, whose index is ``index``, edited as ``runs`` say); ``new``
    gets the memoised views of ``old`` that still hold (call facts, odd contents)."""
    replaced = _replaced(runs, len(old.messages), len(new.messages))
    if replaced is None:
        spliced = _index(index, new.messages, runs)
    else:
        spliced = _index_in_place(index, new.messages, replaced)
    same_callers = spliced.callers is index.callers or _callers_kept(
        index.callers, spliced.callers, runs
    )
    _carry_views(index, spliced, same_callers)
    if spliced.odd_content is index.odd_content:  # in place, none of them touched
        _seed(old, new, _ODD_VIEWS)
    known, facts = old.memoized("call_facts")
    if same_callers and known:
        if facts is not None and replaced is None:
            facts = _facts(facts, index, runs)
        new.seed("call_facts", facts)  # in place: the callers and their spots did not move
    return spliced


def _carry_views(index: Index, spliced: Index, same_callers: bool) -> None:
    """The cached views of ``index`` that hold for ``spliced`` too."""
    if same_callers:
        cached.carry(index, spliced, _CALLER_VIEWS)
    if cached.known(index, "keys")[0]:
        cached.seed(spliced, "keys", _keys(index, spliced))


def _seed(old: CopyOnWrite, new: CopyOnWrite, names: Sequence[str]) -> None:
    """Give ``new`` the memoised views ``names`` of ``old`` (those it computed)."""
    for name in names:
        known, view = old.memoized(name)
        if known:
            new.seed(name, view)


def _replaced(runs: Sequence[Run], before: int, after: int) -> list[int] | None:
    """The positions an edit replaced when it kept every other item where it was (salvaging
    an orphan result of its own run: a tool message turned user message), else None."""
    if before != after or any(start != at for start, _, at in runs):
        return None
    replaced: list[int] = []
    done = 0
    for start, end, _ in runs:
        replaced += range(done, start)
        done = end
    replaced += range(done, after)
    return replaced


def _index_in_place(index: Index, messages: list[Message], replaced: list[int]) -> Index:
    """The index once the items at ``replaced`` were swapped for others: every group that
    neither held one nor takes one is the old group itself (and its messages, the same)."""
    gone = set(replaced)
    taken: dict[str, list[int]] = {}
    callers: list[int] = []
    odd: list[int] = []
    _note(messages, replaced, taken, callers, odd)
    old = index.positions
    # Only the groups of the roles the replaced messages had or have now can change.
    touched = {index.messages[q]["role"] for q in replaced}.union(taken)
    positions = {"tool": [], **old}  # the index's groups in its order (tool first, if empty)
    for role in touched:
        positions[role] = _swapped(old.get(role, []), gone, taken.get(role, []))
    # A new group, or one past the usual three whose first message may have moved: order anew.
    if not (touched.issubset(_USUAL) and touched.issubset(old)):
        positions = _ordered(positions)
    callers = _swapped(index.callers, gone, callers)
    odd = _swapped(index.odd_content, gone, odd)
    return Index.of_parts(messages, positions, callers, odd, index)


def _note(
    messages: list[Message],
    places: Iterable[int],
    positions: dict[str, list[int]],
    callers: list[int],
    odd: list[int],
) -> None:
    """Add the messages at ``places`` (in order) to the groups an index pass would put them in:
    their role's positions, the callers, the odd contents (see :class:`Index`)."""
    for q in places:
        message = messages[q]
        role = message["role"]
        positions.setdefault(role, []).append(q)
        if role != "tool" and "tool_calls" in message:
            callers.append(q)
        content = message.get("content")
        if type(content) is not str or not content:
            odd.append(q)


def _ordered(positions: dict[str, list[int]]) -> dict[str, list[int]]:
    """The groups in an index pass's order: tool, assistant, user, then the other roles in order
    of first appearance (those left with no message out)."""
    usual = {role: positions.get(role, []) for role in _USUAL}
    others = sorted(
        (r for r, p in positions.items() if p and r not in usual), key=lambda r: positions[r][0]
    )
    return {**usual, **{r: positions[r] for r in others}}


def _swapped(where: list[int], gone: set[int], taken: list[int]) -> list[int]:
    """``where`` without the positions in ``gone``, with those in ``taken`` (sorted, a subset of
    ``gone``): ``where`` itself when neither changes it."""
    if not taken and gone.isdisjoint(where):
        return where
    kept = fast.without(where, gone)
    for q in taken:
        insort(kept, q)
    return kept


def _keys(old: Index, new: Index) -> dict[str, frozenset[str]]:
    """The union of the message keys per role: the old one for every group kept whole."""
    return {
        role: old.keys[role] if group is old.by_role.get(role) else fast.union(group)
        for role, group in new.by_role.items()
    }


def _shifted(positions: list[int], start: int, end: int, shift: int) -> list[int]:
    """The positions in ``[start, end)``, moved by ``shift``."""
    return _moved(positions[bisect_left(positions, start) : bisect_left(positions, end)], shift)


def _moved(positions: list[int], shift: int) -> list[int]:
    return [p + shift for p in positions] if shift else positions


def _index(index: Index, messages: list[Message], runs: Sequence[Run]) -> Index:
    positions: dict[str, list[int]] = {"tool": [], "assistant": [], "user": []}
    callers: list[int] = []
    odd: list[int] = []
    filled = 0  # new positions before this are placed

    for start, end, at in runs:
        _note(messages, range(filled, at), positions, callers, odd)
        shift = at - start
        for role, where in index.positions.items():
            positions.setdefault(role, []).extend(_shifted(where, start, end, shift))
        callers += _shifted(index.callers, start, end, shift)
        odd += _shifted(index.odd_content, start, end, shift)
        filled = at + end - start
    _note(messages, range(filled, len(messages)), positions, callers, odd)
    return Index.of_parts(messages, _ordered(positions), callers, odd)


def _callers_kept(old: list[int], new: list[int], runs: Sequence[Run]) -> bool:
    """Whether the new history's callers are the old ones, each in a run (so, the same message
    objects in the same order)."""
    if len(old) != len(new):
        return False
    return sum(len(_shifted(old, start, end, 0)) for start, end, _ in runs) == len(old)


def _facts(facts: CallFacts, index: Index, runs: Sequence[Run]) -> CallFacts:
    """The call facts once the callers moved as ``runs`` say: the spots where their results
    belong move with them."""
    counts = fast.offsets(index.call_lists)  # calls before caller k
    spots: list[int] = []
    for start, end, at in runs:
        first = bisect_left(index.callers, start)
        last = bisect_left(index.callers, end)
        spots += _moved(facts.spots[counts[first] : counts[last]], at - start)
    return CallFacts(facts.ids, spots, facts.arguments, facts.string_arguments, facts.plain)
