"""A batch's write plan (``proxy/repairlog/batch.py``), run against a database kept in dicts:
repeats found in the batch and in the database, payloads written once, stale ones touched, and
what the writer learns once a batch committed."""

from __future__ import annotations

from typing import Any

from proxy.repairlog import Record
from proxy.repairlog.batch import Batch, Memory
from proxy.repairlog.conversation import RepeatKey
from proxy.repairlog.sql import LAST_USED_SLACK, epoch
from tests.repairlog.records import make_record


class Database:
    """What the statements a backend runs between the batch's steps would leave behind."""

    def __init__(self) -> None:
        self.records: dict[str, tuple[Any, ...]] = {}
        self.turns: dict[str, tuple[Any, ...]] = {}
        self.firsts: dict[RepeatKey, str] = {}
        self.payloads: dict[bytes, int] = {}  # digest -> last_used
        self.repeats: dict[str, int] = {}

    def write(self, records: list[Record], memory: Memory) -> Batch:
        batch = Batch(records, memory)
        known = {key: self.firsts[key] for key in batch.lookups() if key in self.firsts}
        firsts, turns, _ = batch.rows(known, str, bytes)
        self.records.update((row[0], row) for row in firsts)
        self.turns.update((row[0], row) for row in turns)
        self.firsts.update((key, row[0]) for row in firsts if (key := batch.keys.get(row[0])))
        unsure = batch.unsure()
        writes = batch.payloads({d: self.payloads[d] for d in unsure if d in self.payloads})
        assert not {digest for digest, _, _ in writes.rows} & self.payloads.keys()
        self.payloads.update((digest, used) for digest, used, _ in writes.rows)
        self.payloads.update(dict.fromkeys(writes.stale, batch.latest))
        for count, _, _, first in batch.bumps(str):
            self.repeats[first] = self.repeats.get(first, 0) + count
        batch.committed()
        return batch


def _turn(n: int) -> Record:
    """Turn ``n`` of one conversation, its findings those of every other turn."""
    return make_record(n, conversation="conv-1")


def test_a_repeat_in_the_batch_and_one_in_the_database_point_at_the_first() -> None:
    db, memory = Database(), Memory()
    first, second, third = _turn(0), _turn(1), _turn(2)
    db.write([first, second], memory)
    assert list(db.records) == [first.id]
    assert list(db.turns) == [second.id]
    assert second.repeat_of == first.id
    db.write([third], memory)
    assert third.repeat_of == first.id
    assert list(db.turns) == [second.id, third.id]
    assert db.repeats == {first.id: 2}


def test_a_record_outside_a_conversation_is_always_a_first() -> None:
    db, memory = Database(), Memory()
    alone = [make_record(0), make_record(1)]
    db.write(alone, memory)
    assert list(db.records) == [r.id for r in alone]
    assert db.turns == {}
    assert db.repeats == {}


def test_what_a_batch_stored_is_not_asked_for_again() -> None:
    memory = Memory()
    first = Batch([_turn(0)], memory)
    first.rows({}, str, bytes)
    everything = first.unsure()
    assert len(everything) > 2  # the body's items, its findings
    first.payloads({})
    first.committed()
    again = Batch([_turn(0)], memory)
    again.rows({}, str, bytes)
    assert again.unsure() == []  # the writer trusts what it stored moments ago
    memory.forget_stored()  # records were deleted, or the database may be another one
    assert sorted(again.unsure()) == sorted(everything)


def test_a_payload_last_used_past_the_slack_is_touched_not_rewritten() -> None:
    db, memory = Database(), Memory()
    record = _turn(0)
    batch = Batch([record], memory)
    batch.rows({}, str, bytes)
    unsure = batch.unsure()
    now = epoch(record.created_at)
    stale, fresh = unsure[0], unsure[1:]
    stored = {stale: now - LAST_USED_SLACK - 1, **dict.fromkeys(fresh, now)}
    writes = batch.payloads(stored)
    assert writes.rows == []
    assert writes.stale == [stale]
    assert writes.used == dict.fromkeys(unsure, now)
    assert db.payloads == {}
