"""The items a repaired history shares with the received one, worked out once by the capture step
and taken from the record by the packer: the same rows as working them out again."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.repairlog.capture import apply_capture
from proxy.repairlog.carry import Sequences
from proxy.repairlog.credentials import Checked
from proxy.repairlog.ends import ends_of, same_objects
from proxy.repairlog.packing import Packer
from proxy.repairlog.rows import pack_bodies
from tests.repairlog.records import make_record


def _repaired(n: int, changed: set[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A received body of ``n`` items and the forwarded copy whose ``changed`` places differ."""
    items = [{"role": "user", "content": f"turn {k} " + "x" * 40} for k in range(n)]
    received = {"model": "m", "messages": items}
    sent = [
        {"role": "user", "content": "salvaged"} if k in changed else v for k, v in enumerate(items)
    ]
    return received, {**received, "messages": sent}


def _packed(record: Any, ends: Any) -> tuple[bytes, dict[bytes, bytes]]:
    packer = Packer(Sequences())
    row = pack_bodies(
        {"received": record.received, "forwarded": record.forwarded},
        packer,
        conversation="c",
        listed=record.listed,
        ends=ends,
    )
    return orjson.dumps(row), {d: packer.payload(d) for d in packer.referenced()}


@given(st.integers(1, 40), st.sets(st.integers(0, 39), max_size=5))
@settings(max_examples=200)
def test_the_ends_are_where_the_lists_hold_the_same_objects(n: int, changed: set[int]) -> None:
    received, forwarded = _repaired(n, changed)
    items, old = received["messages"], forwarded["messages"]
    _, _, head, tail = ends_of(items, old)
    same = [a is b for a, b in zip(items, old, strict=True)]
    assert head == (same.index(False) if False in same else n)
    assert tail == (0 if head == n else same[::-1].index(False))
    assert same_objects(items, old, n) == head


@given(st.integers(1, 40), st.sets(st.integers(0, 39), max_size=5))
@settings(max_examples=100)
def test_a_record_packs_alike_with_the_ends_its_capture_kept(n: int, changed: set[int]) -> None:
    received, forwarded = _repaired(n, changed)
    record = make_record()
    items = forwarded["messages"]
    record.received, record.forwarded = received, forwarded
    record.listed = (items, orjson.dumps(items))
    kept = apply_capture(record, "full", 1024, None, Checked())
    assert kept.ends is not None
    assert kept.ends[0] is received["messages"]
    assert kept.ends[1] is items
    assert _packed(kept, kept.ends) == _packed(kept, None)


def test_the_packer_takes_the_ends_it_is_given_only_for_the_very_same_lists() -> None:
    received, forwarded = _repaired(6, {2})
    record = make_record()
    items = forwarded["messages"]
    record.received, record.forwarded = received, forwarded
    record.listed = (items, orjson.dumps(items))
    plain = _packed(record, None)
    other = list(received["messages"])  # equal, but another list: its ends are not these
    assert _packed(record, (other, items, 6, 0)) == plain
    # Given for these very lists, they are taken as they are (not compared again): ends that
    # claim every item is shared make another patch (which is why they are kept with the lists).
    assert _packed(record, (received["messages"], items, 6, 0))[0] != plain[0]
