"""What a writer remembers between turns (issue 23): it changes how much work a turn costs,
never what is stored. A list packed against its conversation's previous turn gives the digests,
skeleton and payloads a fresh packing gives; a digest is trusted as stored only while collection
cannot have taken it."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.repairlog.carry import Packed, Sequences, StoredDigests, shared_prefix
from proxy.repairlog.packing import Packer
from proxy.repairlog.payloads import CHUNK, unpack_bodies
from proxy.repairlog.rows import pack_bodies
from proxy.repairlog.sql import LAST_USED_SLACK, TRUSTED_FOR, kept_since
from proxy.repairlog.sqlite_conn import statement_sizes


def _turns(count: int) -> list[list[dict[str, Any]]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "agent"}]
    out = []
    for n in range(count):
        history = [*history, {"role": "user", "content": f"step {n} " + "x" * 200}]
        history = [*history, {"role": "assistant", "content": f"done {n}", "n": n}]
        out.append(copy.deepcopy(history))  # each turn parsed anew, as a request is
    return out


def _packed(items: list[Any]) -> Packed:
    packer = Packer(Sequences())
    packer.body({"messages": items}, conversation="c")
    stored = packer._memory.get(("c", "messages"))  # type: ignore[union-attr]
    assert stored is not None
    return stored


def test_a_turn_packed_against_the_last_is_what_a_fresh_packing_gives() -> None:
    memory = Sequences()
    for items in _turns(3 * CHUNK):
        carried, fresh = Packer(memory), Packer()
        body = {"model": "m", "messages": items}
        assert carried.body(body, conversation="c") == fresh.body(body)
        assert carried.referenced() == fresh.referenced()
        for digest in fresh.referenced():
            assert carried.payload(digest) == fresh.payload(digest)
    assert len(memory) == 1


def test_only_identical_bytes_are_shared() -> None:
    items = [{"role": "user", "content": "a", "n": 1}, {"role": "assistant", "content": "b"}]
    before = _packed(items)
    assert shared_prefix(before, orjson.dumps([*items, {"role": "user"}])) == 2
    reordered = [{"n": 1, "role": "user", "content": "a"}, items[1]]  # equal as dicts, not bytes
    assert reordered[0] == items[0]
    assert shared_prefix(before, orjson.dumps(reordered)) == 0
    truer = [{"role": "user", "content": "a", "n": True}, items[1]]  # 1 == True in Python
    assert shared_prefix(before, orjson.dumps(truer)) == 0
    assert shared_prefix(before, orjson.dumps([items[0], {"role": "assistant"}])) == 1
    numbers = _packed([1, 2])
    assert shared_prefix(numbers, orjson.dumps([1, 23])) == 1  # "2" is a prefix of "23"


def test_the_memory_is_bounded_by_bytes() -> None:
    memory = Sequences(max_bytes=1000)
    for n in range(10):
        packer = Packer(memory)
        packer.body({"messages": [{"content": "y" * 300}]}, conversation=f"c{n}")
    assert memory.bytes <= 1000
    assert len(memory) == 3


def test_received_is_packed_against_the_forwarded_json_it_was_sent_as() -> None:
    received = {"model": "m", "messages": [{"role": "user", "content": str(n)} for n in range(40)]}
    forwarded = {**received, "messages": received["messages"][:2] + received["messages"][3:]}
    items = forwarded["messages"]
    listed = (items, orjson.dumps(items))
    packer = Packer(Sequences())
    row = pack_bodies(
        {"received": received, "forwarded": forwarded}, packer, conversation="c", listed=listed
    )
    row["findings"] = []
    assert "p" in row["received"]["messages"]["$seq"]  # the patch: forwarded is the whole one
    blobs = {d: packer.payload(d) for d in packer.referenced()}
    unpack_bodies(row, blobs)
    assert orjson.dumps(row["received"]) == orjson.dumps(received)
    assert orjson.dumps(row["forwarded"]) == orjson.dumps(forwarded)


def test_a_digest_is_trusted_only_while_collection_cannot_take_it() -> None:
    stored = StoredDigests(TRUSTED_FOR, limit=4)
    now = 1_000_000
    stored.update({b"a": now, b"b": now - TRUSTED_FOR - 1})
    assert stored.fresh([b"a", b"b", b"c"], now) == {b"a": now}
    assert TRUSTED_FOR < LAST_USED_SLACK  # what is trusted is never older than the slack
    stored.update({bytes([n]): now for n in range(10)})
    assert len(stored) <= 4
    stored.clear()
    assert stored.fresh([b"a"], now) == {}


def _batch(memory: Sequences, stored: StoredDigests, items: list[Any], now: int) -> set[bytes]:
    """What a writer's batch of one turn references; what it learns once it committed (every
    payload it referenced now has ``last_used`` ``now``)."""
    packer = Packer(memory)
    packer.body({"messages": items}, conversation="c")
    referenced = packer.referenced(lambda packed: stored.trusts(packed, now))
    used = dict.fromkeys(referenced, now)
    stored.update(used)
    packer.confirm(used, stored.generation)
    return referenced


def _all(items: list[Any]) -> set[bytes]:
    packer = Packer()
    packer.body({"messages": items})
    return packer.referenced()


def test_a_turn_whose_history_was_confirmed_references_only_what_is_new() -> None:
    memory, stored = Sequences(), StoredDigests(TRUSTED_FOR)
    turns = _turns(2 * CHUNK + 3)
    now = 1_000_000
    assert _batch(memory, stored, turns[0], now) == _all(turns[0])
    for n in range(1, len(turns)):
        referenced = _batch(memory, stored, turns[n], now + n)
        assert referenced < _all(turns[n])
        assert len(referenced) <= 3  # the two items this turn added, a chunk they completed
    # Trusted no longer once its oldest payload is older than the trust (collection could
    # come), or once the writer's memory of what is stored was cleared (a collection ran).
    items = [*turns[-1], {"role": "user", "content": "one more"}]
    later = now + len(turns) + TRUSTED_FOR + 1
    assert _batch(memory, stored, items, later) == _all(items)
    assert len(_batch(memory, stored, [*items, {"role": "user"}], later)) <= 3
    items = [*items, {"role": "user", "content": "and one more"}]
    stored.clear()
    assert _batch(memory, stored, items, later + 1) == _all(items)


def test_the_turns_of_one_batch_reference_every_payload_and_stamp_their_lists() -> None:
    """A conversation's turns written in one batch (the usual case: an agent's turns come
    faster than the flush interval). Each turn's list carries the one the batch made for the
    turn before: every payload is referenced all the same, and the last list is stamped with
    the oldest ``last_used`` of all it holds, so the next batch trusts it."""
    memory, stored = Sequences(), StoredDigests(TRUSTED_FOR)
    turns = _turns(2 * CHUNK + 3)
    now = 1_000_000
    packer = Packer(memory)
    for items in turns[:-1]:
        packer.body({"messages": items}, conversation="c")
    referenced = packer.referenced(lambda packed: stored.trusts(packed, now))
    assert referenced == set().union(*(_all(items) for items in turns[:-1]))
    assert all(packer.payload(digest) for digest in referenced)
    used = dict.fromkeys(referenced, now)
    oldest = _packed(turns[0][:1]).digests[0]  # the system message, in every turn
    used[oldest] = now - 5
    stored.update(used)
    packer.confirm(used, stored.generation)
    last = memory.get(("c", "messages"))
    assert last is not None
    assert last.confirmed == (stored.generation, now - 5)
    assert len(_batch(memory, stored, turns[-1], now + 1)) <= 3


def test_collection_never_takes_what_was_used_within_the_slack_of_now() -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    assert kept_since(None) >= int(now.timestamp())  # no record kept: now, not "everything"
    assert kept_since(now + timedelta(days=1)) <= int(now.timestamp()) + 1
    assert kept_since(now - timedelta(days=1)) == int((now - timedelta(days=1)).timestamp())


@pytest.mark.parametrize("count", [0, 1, 7, 32, 33, 100, 999, 1500])
def test_statements_come_in_few_shapes(count: int) -> None:
    sizes = list(statement_sizes(count, 33))
    assert sum(sizes) == count
    assert all(s == 33 or s & (s - 1) == 0 for s in sizes)  # the most, or a power of two
    tail = [s for s in sizes if s != 33]
    assert len(set(tail)) == len(tail)  # each power of two once: a handful of texts in all


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.integers(0, 2), max_size=8),
    st.lists(st.one_of(st.integers(0, 2), st.text(max_size=1)), max_size=8),
)
def test_a_patch_gives_back_its_list_whatever_it_shares(kept: list[int], picks: list[Any]) -> None:
    """A forwarded list packed as a patch against the received one, whichever of its item
    objects it shares (at the start, at the end, in between, more than once or none; a
    client's list can hold one object twice)."""
    pool = [{"role": "user", "content": f"m{n}"} for n in range(3)]
    received = {"model": "m", "messages": [pool[k] for k in kept]}
    chosen = [pool[p] if type(p) is int else {"role": "x", "c": p} for p in picks]
    forwarded = {"model": "m", "messages": chosen}
    packer = Packer(Sequences())
    row = pack_bodies({"received": received, "forwarded": forwarded}, packer, conversation="c")
    row["findings"] = []
    unpack_bodies(row, {d: packer.payload(d) for d in packer.referenced()})
    assert orjson.dumps(row["received"]) == orjson.dumps(received)
    assert orjson.dumps(row["forwarded"]) == orjson.dumps(forwarded)
