"""Carrying a history's views through an edit, so a repair does not pay for a second analysis.

A pairing repair (``insert_after``: salvage an orphan result, move a misplaced one, synthesize a
missing one) changes one or two messages of a long history, and the rules after it, and the
fixpoint's next pass, then look at the new history: the one-pass :class:`Index` and the call
facts (:func:`~proxy.core.chat.rules.views.call_facts`) were computed again from scratch, a walk
over every message and every call, half the cost of a clean check (issue 23).

:meth:`~proxy.core.history.CopyOnWrite.edited` builds the new history from runs of the old one,
copied as slices, and the items it inserts. The index of the new one is the old one's positions
without the dropped ones, each renumbered by a lookup in a table of new positions (in C), plus
what the inserted items are; a group that lost and took no message keeps its messages and its
union of keys, and one that did keeps its union when the messages left still hold each key the
lost ones had. The call facts carry over whole when every message that makes calls kept its
place in a run (their ids and arguments are the same lists, their spots follow the callers). Both
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
#: Per role, the messages its group lost (of the old history) and took (of the new) in an edit.
Changes = dict[str, tuple[list[Message], list[Message]]]

#: The lazily computed views of an index that depend only on its callers (carried when the
#: callers are the same messages, in the same order).
_CALLER_VIEWS = (
    "caller_messages",
    "assistant_callers",
    "call_lists",
    "regular",
    "calls",
    "empty_call_list",
)
#: The lazily computed views of an index that depend only on its tool messages (carried when
#: they are the same messages, in the same order).
_TOOL_VIEWS = ("answer_ids",)
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
        spliced, changes = _index(index, new.messages, runs)
    else:
        spliced, changes = _index_in_place(index, new.messages, replaced)
    same_callers = spliced.callers is index.callers or _callers_kept(
        index.callers, spliced.callers, runs
    )
    _carry_views(index, spliced, same_callers, changes)
    if spliced.odd_content is index.odd_content:  # in place, none of them touched
        _seed(old, new, _ODD_VIEWS)
    known, facts = old.memoized("call_facts")
    if same_callers and known:
        if facts is not None and replaced is None:
            facts = _facts(facts, spliced)
        new.seed("call_facts", facts)  # in place: the callers and their spots did not move
    return spliced


def _carry_views(index: Index, spliced: Index, same_callers: bool, changes: Changes) -> None:
    """The cached views of ``index`` that hold for ``spliced`` too."""
    if same_callers:
        cached.carry(index, spliced, _CALLER_VIEWS)
    if spliced.by_role.get("tool") is index.by_role.get("tool"):
        cached.carry(index, spliced, _TOOL_VIEWS)
    if cached.known(index, "keys")[0]:
        cached.seed(spliced, "keys", _keys(index, spliced, changes))


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
    return _gaps(runs, after)


def _index_in_place(
    index: Index, messages: list[Message], replaced: list[int]
) -> tuple[Index, Changes]:
    """The index once the items at ``replaced`` were swapped for others: every group that
    neither held one nor takes one is the old group itself (and its messages, the same)."""
    taken: dict[str, list[int]] = {}
    callers: list[int] = []
    odd: list[int] = []
    _note(messages, replaced, taken, callers, odd)
    old = index.positions
    changes: Changes = {}
    for q in replaced:  # what left each group (messages in the old history), what came in
        changes.setdefault(index.messages[q]["role"], ([], []))[0].append(index.messages[q])
        changes.setdefault(messages[q]["role"], ([], []))[1].append(messages[q])
    # Only the groups of the roles the replaced messages had or have now can change.
    touched = changes.keys()
    positions = {"tool": [], **old}  # the index's groups in its order (tool first, if empty)
    for role in touched:
        positions[role] = _swapped(old.get(role, []), replaced, taken.get(role, []))
    # A new group, or one past the usual three whose first message may have moved: order anew.
    if not (touched <= set(_USUAL) and touched <= old.keys()):
        positions = _ordered(positions)
    callers = _swapped(index.callers, replaced, callers)
    odd = _swapped(index.odd_content, replaced, odd)
    return Index.of_parts(messages, positions, callers, odd, kept=index), changes


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


def _swapped(where: list[int], gone: list[int], taken: list[int]) -> list[int]:
    """``where`` (sorted) without the positions in ``gone``, with those in ``taken`` (sorted, a
    subset of ``gone``): ``where`` itself when neither changes it. Found by bisection: an edit
    replaces a few messages of a long history."""
    held = [q for q in gone if _holds(where, q)]
    if not taken and not held:
        return where
    kept = list(where)
    for q in reversed(held):  # gone is in order: the later first, the earlier stay in place
        del kept[bisect_left(kept, q)]
    for q in taken:
        insort(kept, q)
    return kept


def _holds(where: list[int], q: int) -> bool:
    """Whether the sorted positions ``where`` hold ``q``."""
    k = bisect_left(where, q)
    return k < len(where) and where[k] == q


def _keys(old: Index, new: Index, changes: Changes) -> dict[str, frozenset[str]]:
    """The union of the message keys per role: the old one for every group kept whole."""
    keys = old.keys
    return {
        role: keys[role]
        if group is old.by_role.get(role)
        else _group_keys(keys.get(role), group, *changes.get(role, ((), ())))
        for role, group in new.by_role.items()
    }


def _group_keys(
    keys: frozenset[str] | None,
    group: Sequence[Message],
    lost: Sequence[Message],
    came: Sequence[Message],
) -> frozenset[str]:
    """The union of the keys of ``group``, once it lost and took these messages: the old union
    ``keys`` and what the taken ones bring, when a message of the group still holds each key
    of the lost ones (the first one does, as a rule), else a union over the whole group."""
    if keys is None or not all(fast.held(group, key) for message in lost for key in message):
        return fast.union(group)
    return keys.union(*came)


def _within(positions: list[int], start: int, end: int) -> list[int]:
    """The positions in ``[start, end)``."""
    return positions[bisect_left(positions, start) : bisect_left(positions, end)]


def _index(index: Index, messages: list[Message], runs: Sequence[Run]) -> tuple[Index, Changes]:
    # Every kept position is renumbered by one lookup in the table of new positions (built
    # from ranges, in C), not shifted run by run: an edit near the start of a long history
    # moves nearly every message (issue 34).
    size = len(index.messages)
    table = _table(runs, size)
    gone = _gaps(runs, size)
    changes: Changes = {}
    _lost(index.messages, gone, changes)
    positions = {role: _renumbered(where, gone, table) for role, where in index.positions.items()}
    callers = _renumbered(index.callers, gone, table)
    odd = _renumbered(index.odd_content, gone, table)
    added: dict[str, list[int]] = {}
    added_callers: list[int] = []
    added_odd: list[int] = []
    _note(messages, _gaps(_placed(runs), len(messages)), added, added_callers, added_odd)
    for role, where in added.items():
        _insert(positions.setdefault(role, []), where)
        changes.setdefault(role, ([], []))[1].extend(messages[q] for q in where)
    _insert(callers, added_callers)
    _insert(odd, added_odd)
    # A group that lost and took no message is the same messages, in the same order.
    same = index.positions.keys() - changes.keys()
    spliced = Index.of_parts(messages, _ordered(positions), callers, odd, kept=index, same=same)
    return spliced, changes


def _table(runs: Sequence[Run], size: int) -> list[int]:
    """The new position of each old one an edit kept (0 for those it dropped)."""
    table = [0] * size
    for start, end, at in runs:
        table[start:end] = range(at, at + end - start)
    return table


def _placed(runs: Sequence[Run]) -> list[Run]:
    """The runs as spans of the new history: what lies between them was inserted."""
    return [(at, at + end - start, at) for start, end, at in runs]


def _gaps(runs: Sequence[Run], size: int) -> list[int]:
    """The positions of ``[0, size)`` outside every run's ``[start, end)``, in order."""
    found: list[int] = []
    done = 0
    for start, end, _ in runs:
        found += range(done, start)
        done = end
    found += range(done, size)
    return found


def _renumbered(where: list[int], gone: list[int], table: list[int]) -> list[int]:
    """The sorted old positions ``where``, without those in ``gone``, at their new places."""
    kept = _swapped(where, gone, [])
    return list(fast.at(table, kept))


def _insert(where: list[int], new: list[int]) -> None:
    """Put the positions ``new`` into the sorted ``where``."""
    for q in new:
        insort(where, q)


def _lost(messages: list[Message], places: Iterable[int], changes: Changes) -> None:
    """Note the messages at ``places`` (of the old history) as lost by their role's group."""
    for q in places:
        changes.setdefault(messages[q]["role"], ([], []))[0].append(messages[q])


def _callers_kept(old: list[int], new: list[int], runs: Sequence[Run]) -> bool:
    """Whether the new history's callers are the old ones, each in a run (so, the same message
    objects in the same order)."""
    if len(old) != len(new):
        return False
    return sum(len(_within(old, start, end)) for start, end, _ in runs) == len(old)


def _facts(facts: CallFacts, spliced: Index) -> CallFacts:
    """The call facts once the callers moved (the same messages, the same calls): the spots
    where their results belong are right after them, as :func:`fast.spots` finds anew."""
    spots = fast.spots(spliced.callers, spliced.call_lists)
    return CallFacts(facts.ids, spots, facts.arguments, facts.string_arguments, facts.plain)
