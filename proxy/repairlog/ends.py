"""Which items of a repaired history are the received one's very objects, worked out once.

A repair copies a history on write: the forwarded list holds the received list's own item
objects but for the few it changed. Two steps of recording a repaired request want to know how
many items at either end the two lists share by identity: the capture step (only the others are
searched for credentials, :mod:`.credentials`) and the packer (only the others are hashed,
:mod:`.packing`). Told apart item by item in C, that still costs about 300 instructions an item
under callgrind, a 180-item history's 50,000 per record each time (issue 34); the capture step
keeps its :data:`Ends` on the record, and the packer takes them from there. Pure: no I/O.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from itertools import compress
from operator import is_not
from typing import Any


def same_objects(items: Iterable[Any], old: Iterable[Any], most: int) -> int:
    """How many leading items of ``items`` (``most`` at most) are the very objects of ``old``:
    compared in C, up to the first that differs."""
    return min(next(compress(itertools.count(), map(is_not, items, old)), most), most)


#: ``(items, old, head, tail)``: ``head`` leading and ``tail`` trailing items of ``items`` are
#: those of ``old``, place by place (from either end; together no more than the shorter list).
#: It holds both lists, so the ids it was worked out for stay theirs while it is kept. A plain
#: tuple: a dataclass's ``__init__`` cost more than the lookups it saves on a short history.
Ends = tuple[list[Any], list[Any], int, int]


def ends_of(items: list[Any], old: list[Any], known: Ends | None = None) -> Ends:
    """The :data:`Ends` of ``items`` against ``old``: ``known`` when it was worked out for
    these very two lists, else worked out now."""
    if known is not None and known[0] is items and known[1] is old:
        return known
    most = min(len(items), len(old))
    head = same_objects(items, old, most)
    return items, old, head, same_objects(reversed(items), reversed(old), most - head)
