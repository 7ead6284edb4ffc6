"""Carrying a Gemini history's index through an edit, so a repair does not pay for a second walk.

A pairing repair (a lost response synthesized, an extra one salvaged, a name filled) changes one
or a few contents of a long history; the rules after it, and the engine's next pass, then read
the new history, whose index was walked again from scratch: as much again as the whole check of
a clean history.

:meth:`~proxy.core.gemini.items.Contents.replace` swaps some contents in place, and
:meth:`~proxy.core.history.CopyOnWrite.edited` builds the new history from runs of the old one,
copied as slices, and the contents it inserts. The index of the new one is the old one's
findings, run by run, shifted (found by bisection), plus what a walk of the new contents finds:
exactly what a fresh walk would find (``tests/core/gemini/test_carry.py`` compares them after
random edits, ``tests/core/gemini/test_index.py`` after every repair of generated histories).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from proxy.core.gemini.index import Index, Sizes, indexed, walk
from proxy.core.gemini.parts import Item

#: (old start, old end, new start): the old contents ``[start, end)`` sit from ``new start`` on.
Run = tuple[int, int, int]
#: What :func:`~proxy.core.gemini.index.walk` finds: roles as sent, calls, responses, unusual.
Walked = tuple[list[Any], Sizes, Sizes, list[int]]


def replaced(index: Index, contents: list[Item], changed: Iterable[int]) -> Index:
    """The index of ``contents``, the contents ``index`` was made of with those at the
    ``changed`` positions swapped."""
    places = sorted(changed)
    sent = list(index.sent_roles)
    kept = set(places)
    calls = {i: n for i, n in index.calls.items() if i not in kept}
    responses = {i: n for i, n in index.responses.items() if i not in kept}
    unusual = [i for i in index.unusual if i not in kept]
    _add(walk([contents[i] for i in places]), places, (sent, calls, responses, unusual))
    return indexed(sent, _ordered(calls), _ordered(responses), sorted(unusual))


def edited(index: Index, contents: list[Item], runs: Sequence[Run]) -> Index:
    """The index of ``contents``, made of the runs of those ``index`` was made of and of
    contents inserted between them."""
    sent: list[Any] = [None] * len(contents)
    calls: Sizes = {}
    responses: Sizes = {}
    unusual: list[int] = []
    call_keys, response_keys = list(index.calls), list(index.responses)
    for start, end, at in runs:
        sent[at : at + end - start] = index.sent_roles[start:end]
        shift = at - start
        calls.update((i + shift, index.calls[i]) for i in _within(call_keys, start, end))
        responses.update(
            (i + shift, index.responses[i]) for i in _within(response_keys, start, end)
        )
        unusual += [i + shift for i in _within(index.unusual, start, end)]
    inserted = _gaps(runs, len(contents))
    _add(walk([contents[i] for i in inserted]), inserted, (sent, calls, responses, unusual))
    return indexed(sent, _ordered(calls), _ordered(responses), sorted(unusual))


def _within(positions: list[int], start: int, end: int) -> list[int]:
    """The sorted ``positions`` in ``[start, end)``."""
    return positions[bisect_left(positions, start) : bisect_left(positions, end)]


def _gaps(runs: Sequence[Run], size: int) -> list[int]:
    """The positions of a history of ``size`` contents that no run covers (inserted)."""
    covered = [False] * size
    for start, end, at in runs:
        covered[at : at + end - start] = [True] * (end - start)
    return [i for i, known in enumerate(covered) if not known]


def _add(found: Walked, places: list[int], into: Walked) -> None:
    """Put what a walk of the contents at ``places`` found (numbered from 0) ``into`` the
    findings at those places."""
    walked_sent, walked_calls, walked_responses, walked_unusual = found
    sent, calls, responses, unusual = into
    for k, i in enumerate(places):
        sent[i] = walked_sent[k]
    calls.update((places[k], n) for k, n in walked_calls.items())
    responses.update((places[k], n) for k, n in walked_responses.items())
    unusual += [places[k] for k in walked_unusual]


def _ordered(sizes: Mapping[int, int]) -> Sizes:
    """``sizes`` with its keys in order."""
    return dict(sorted(sizes.items()))
