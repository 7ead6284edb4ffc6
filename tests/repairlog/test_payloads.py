"""Content-addressed bodies and conversations (issue 23), on every backend.

A body read back is exactly the body written, whatever it holds (marker look-alikes included);
a conversation's turns share their stored items; repeats of one break count on the first record;
retention takes the payloads no record references any more.
"""

from __future__ import annotations

import base64
import dataclasses
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from proxy.repairlog import Record, RecordQuery, RepairLog
from proxy.repairlog.conversation import _hex
from proxy.repairlog.packing import Packer
from proxy.repairlog.payloads import CHUNK, _split, chunk_refs, digest_of, leaf_refs, names, unpack
from proxy.repairlog.rows import pack_bodies
from tests.repairlog.records import T0

pytestmark = pytest.mark.anyio

TRICKY_BODIES: list[Any] = [
    {"model": "m", "messages": [{"role": "user", "content": "x" * 500}] * (2 * CHUNK + 3)},
    {"model": "m", "messages": {"$seq": {"c": [], "t": []}}},
    {"model": "m", "messages": {"$raw": 1}, "input": {"$v": "AAAA"}},
    {"$body": {"$v": "x"}},
    {"$body": "y" * 400},
    ["a", "list", "body"],
    "a string body",
    None,
    {"model": "m", "messages": [], "tools": [{"name": "t", "schema": "s" * 300}]},
    {"instructions": "i" * 1000, "input": [{"type": "message", "content": [{"$v": "AAAA"}]}]},
]


def _roundtrip(body: Any) -> Any:
    packer = Packer()
    skeleton = packer.body(body)
    chunks = {d: packer.blobs[d] for d in chunk_refs([skeleton])}
    leaves = {d: packer.blobs[d] for d in leaf_refs([skeleton], chunks)}
    return unpack(skeleton, {**chunks, **leaves})


@pytest.mark.parametrize("body", TRICKY_BODIES)
def test_a_packed_body_unpacks_to_itself(body: Any) -> None:
    assert _roundtrip(body) == body


def test_digests_are_those_stored_logs_hold() -> None:
    """A payload's address is BLAKE2b-96 of its bytes, a key's BLAKE2b-64 of its parts' JSON:
    logs written before keep answering (pinned values), each digest of its own bytes only."""
    item = b'{"role":"user","content":"hi"}'
    assert digest_of(item).hex() == "c596eaa636e18901f8acb1a4"
    assert digest_of(b"").hex() == "b8e1dda3ac0aa3820ad2990b"
    assert digest_of(item).hex() == "c596eaa636e18901f8acb1a4"  # nothing carried over
    assert _hex("start", "/v1/chat/completions", [], "x") == "c4e1546c98afdf64"


@pytest.mark.parametrize("count", [0, 1, 2, CHUNK, CHUNK + 1])
def test_digests_are_named_in_base64_and_read_back(count: int) -> None:
    digests = [digest_of(bytes([n])) for n in range(count)]
    assert names(digests) == base64.b64encode(b"".join(digests)).decode()
    assert _split(names(digests)) == digests


def _turn(n: int, *, broken: bool = True, conversation: str = "c1", topic: str = "") -> Record:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent."}]
    for k in range(n):
        history += [
            {"role": "user", "content": f"{topic}question {k} " + "q" * 300},
            {"role": "assistant", "content": f"answer {k} " + "a" * 300},
        ]
    findings = [{"rule": "orphan_tool_result", "action": "salvage", "path": "messages[2]"}]
    return Record(
        upstream="openai",
        model="gpt-4o",
        path="/v1/chat/completions",
        stream=False,
        outcome="repaired" if broken else "warned",
        findings=findings,
        received={"model": "gpt-4o", "messages": history},
        forwarded={"model": "gpt-4o", "messages": history[:2] + history[3:]},
        conversation=conversation,
        ending="complete",
        created_at=T0 + timedelta(seconds=n),
    )


async def test_bodies_come_back_exactly(log: RepairLog) -> None:
    records = [
        Record(
            upstream="openai",
            model="m",
            path="/v1/chat/completions",
            stream=False,
            outcome="rejected",
            findings=[],
            received=body,
            forwarded=body,
            attempts=[{"forwarded": body, "upstream_status": 400}],
            created_at=T0 + timedelta(seconds=n),
        )
        for n, body in enumerate(TRICKY_BODIES)
    ]
    await log.write(records)
    for record in records:
        got = await log.get(record.id)
        assert got is not None
        assert got["received"] == record.received
        assert got["forwarded"] == record.forwarded
        assert got["attempts"] == record.attempts


async def test_repeats_count_on_the_first_record(log: RepairLog) -> None:
    turns = [_turn(n) for n in range(1, 6)]
    other = _turn(3, conversation="c2")
    await log.write(turns[:2])
    await log.write([*turns[2:], other])

    first = await log.get(turns[0].id)
    assert first is not None
    assert first["repeat_of"] is None
    assert first["repeats"] == 4
    assert first["last_seen"] == (T0 + timedelta(seconds=5)).isoformat(timespec="microseconds")
    for turn in turns[1:]:
        got = await log.get(turn.id)
        assert got is not None
        assert got["repeat_of"] == turns[0].id
        assert got["received"] == turn.received  # every turn opens whole
        assert got["forwarded"] == turn.forwarded

    stats = await log.stats(None)  # repeats are counted apart, by how the answers ended
    assert (stats["total"], stats["repeats"]) == (2, 4)
    assert stats["by_ending"] == {"complete": 2}

    listed, _ = await log.query(RecordQuery())  # one row per broken conversation
    assert {row["id"] for row in listed} == {turns[0].id, other.id}
    turns_of_c1, _ = await log.query(RecordQuery(conversation="c1"))
    assert [row["id"] for row in turns_of_c1] == [t.id for t in reversed(turns)]
    assert [row["repeat_of"] for row in turns_of_c1] == [turns[0].id] * 4 + [None]

    assert await log.delete(T0 + timedelta(seconds=3)) == 2  # a first record and a repeat
    assert await log.get(turns[0].id) is None
    kept = await log.get(turns[2].id)
    assert kept is not None
    assert kept["received"] == turns[2].received  # its items outlive the first record


async def test_a_new_break_in_a_conversation_is_a_first_record(log: RepairLog) -> None:
    first, new_break = _turn(1), _turn(2, broken=False)
    await log.write([first, new_break])
    got = await log.get(new_break.id)
    assert got is not None
    assert got["repeat_of"] is None


def _sqlite_path(tmp_path: Path) -> Path:
    return tmp_path / "repairs.sqlite3"


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_a_conversation_stores_what_is_new(log: RepairLog, tmp_path: Path) -> None:
    turns = [_turn(n) for n in range(1, 41)]
    for turn in turns:
        await log.write([turn])
    final = len(str(turns[-1].received))
    with sqlite3.connect(_sqlite_path(tmp_path)) as conn:
        stored = conn.execute("SELECT sum(length(body)) FROM payloads").fetchone()[0]
        skeletons = conn.execute(
            "SELECT sum(length(received) + length(forwarded)) FROM"
            " (SELECT received, forwarded FROM records UNION ALL"
            " SELECT received, forwarded FROM turns)"
        ).fetchone()[0]
    # Every item once (the forwarded ones are the received ones), not once per turn; what each
    # turn adds beyond its new items is a few hundred bytes of references.
    assert stored < 1.3 * final
    assert skeletons < 0.5 * final


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_retention_takes_the_payloads_no_record_references(
    log: RepairLog, tmp_path: Path
) -> None:
    old = _turn(3, conversation="old", topic="old ")
    kept = dataclasses.replace(_turn(30, conversation="kept"), created_at=T0 + timedelta(hours=2))
    await log.write([old])
    await log.write([kept])
    deleted = await log.delete(T0 + timedelta(hours=1))
    assert deleted == 1
    got = await log.get(kept.id)
    assert got is not None
    assert got["received"] == kept.received
    with sqlite3.connect(_sqlite_path(tmp_path)) as conn:
        digests = {row[0] for row in conn.execute("SELECT digest FROM payloads")}
    packer = Packer()
    pack_bodies({"received": kept.received, "forwarded": kept.forwarded}, packer)
    assert digests == set(packer.blobs)  # the old conversation's own items are gone
