"""One contract for every repair-log backend (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from proxy.repairlog import Record, RecordQuery, RepairLog
from proxy.repairlog.record import utcnow
from tests.repairlog.records import T0, make_record, mixed_records, newest_first

pytestmark = pytest.mark.anyio

BODY_KEYS = {"received", "forwarded", "upstream_error"}


async def all_pages(log: RepairLog, limit: int, **filters: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cursor = None
    for _ in range(1000):
        page, cursor = await log.query(RecordQuery(limit=limit, cursor=cursor, **filters))
        assert len(page) <= limit
        rows += page
        if cursor is None:
            return rows
        assert len(page) == limit  # only a full page names a next one
    raise AssertionError("pagination did not end")


async def test_a_record_comes_back_whole(log: RepairLog) -> None:
    received = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "héllo ✓ \u0000 nul"}],
        "z_first": {"nested": [1, 2.5, None, True]},
        "a_after": "order kept",
    }
    record = Record(
        upstream="deepseek",
        model="deepseek-chat",
        path="/deepseek/v1/chat/completions",
        stream=True,
        outcome="upstream_rejected",
        findings=[
            {"rule": "developer_role", "action": "warn", "path": "messages[0]", "detail": "d"}
        ],
        received=received,
        forwarded={"model": "gpt-4o", "messages": []},
        upstream_status=400,
        upstream_error="unknown variant `developer`",
        upstream_error_kind="developer_role",
        duration_ms=12.5,
        sanitize_ms=0.25,
        upstream_ms=10.0,
        request_id="req-abc",
        status=200,
        proxy_error=None,
        ending="upstream_cut",
        owner="client:0123456789abcdef01234567",
        attempts=[
            {"forwarded": {"n": 1}, "upstream_status": 400, "retried_rule": "developer_role"},
            {"forwarded": {"n": 2}, "upstream_status": 200, "retried_rule": None},
        ],
        created_at=datetime(2025, 6, 1, 14, 30, 15, 123456, tzinfo=timezone(timedelta(hours=2))),
    )
    await log.write([record])

    got = await log.get(record.id)

    assert got == {
        "id": record.id,
        "created_at": "2025-06-01T12:30:15.123456+00:00",
        "upstream": "deepseek",
        "model": "deepseek-chat",
        "path": "/deepseek/v1/chat/completions",
        "stream": True,
        "outcome": "upstream_rejected",
        "upstream_status": 400,
        "upstream_error_kind": "developer_role",
        "request_id": "req-abc",
        "duration_ms": 12.5,
        "sanitize_ms": 0.25,
        "upstream_ms": 10.0,
        "status": 200,
        "proxy_error": None,
        "ending": "upstream_cut",
        "conversation": None,
        "client": None,
        "repeat_of": None,
        "repeats": 0,
        "last_seen": None,
        "owner": "client:0123456789abcdef01234567",
        "rules": {"developer_role": 1},
        "findings": record.findings,
        "upstream_error": "unknown variant `developer`",
        "received": received,
        "forwarded": {"model": "gpt-4o", "messages": []},
        "attempts": record.attempts,
    }
    assert list(got["received"]) == ["model", "messages", "z_first", "a_after"]


async def test_a_client_key_sees_its_own_records_and_counts_only(log: RepairLog) -> None:
    """Issue 35 finding 5: records carry their owner; a query and the stats can keep to it."""
    owners = ["client:a", "client:b", None, "client:a"]
    records = [
        make_record(n, owner=owner, rules=("orphan_tool_result", f"r{n}"))
        for n, owner in enumerate(owners)
    ]
    await log.write(records)
    mine = await all_pages(log, 1, owner="client:a")
    assert [row["id"] for row in mine] == [records[3].id, records[0].id]
    assert all(row["owner"] == "client:a" for row in mine)
    ruled = await all_pages(log, 5, owner="client:b", rule="orphan_tool_result")
    assert [row["id"] for row in ruled] == [records[1].id]
    stats = await log.stats(None, "client:a")
    assert stats["total"] == 2
    assert stats["by_rule"] == {"orphan_tool_result": 2, "r0": 1, "r3": 1}
    assert (await log.stats(None))["total"] == 4
    assert (await log.get(records[1].id) or {})["owner"] == "client:b"


async def test_the_capture_key_is_made_once_and_kept(log: RepairLog) -> None:
    key = await log.capture_key()
    assert len(key) >= 16
    assert await log.capture_key() == key


async def test_records_filter_on_how_their_answer_ended(log: RepairLog) -> None:
    endings = ["complete", "upstream_cut", "upstream_timeout", "client_gone", None, "upstream_cut"]
    records = [make_record(n, ending=ending) for n, ending in enumerate(endings)]
    await log.write(records)
    cut = await all_pages(log, 1, ending="upstream_cut")
    assert [row["id"] for row in cut] == [records[5].id, records[1].id]
    assert all(row["ending"] == "upstream_cut" for row in cut)
    gone = await all_pages(log, 10, ending="client_gone", outcome="repaired")
    assert [row["id"] for row in gone] == [records[3].id]
    every = await all_pages(log, 10)
    assert [row["ending"] for row in every] == endings[::-1]


async def test_rejected_record_has_no_forwarded_body(log: RepairLog) -> None:
    record = make_record(outcome="rejected", model=None, rules=())
    await log.write([record])
    got = await log.get(record.id)
    assert got is not None
    assert got["forwarded"] is None
    assert got["model"] is None
    assert got["rules"] == {}


async def test_unknown_id_is_none(log: RepairLog) -> None:
    await log.write([make_record()])
    assert await log.get("01900000-0000-7000-8000-000000000000") is None


async def test_writing_an_id_twice_keeps_one_record(log: RepairLog) -> None:
    record = make_record()
    await log.write([record])
    await log.write([record])
    page, _ = await log.query(RecordQuery())
    assert [row["id"] for row in page] == [record.id]
    assert (await log.stats(None))["by_rule"] == {"orphan_tool_result": 1}


async def test_large_bodies_round_trip(log: RepairLog) -> None:
    record = make_record()
    record.received = {"messages": [{"role": "user", "content": "x" * 2_000_000}]}
    await log.write([record])
    got = await log.get(record.id)
    assert got is not None
    assert len(got["received"]["messages"][0]["content"]) == 2_000_000


async def test_summaries_come_newest_first_without_bodies(log: RepairLog) -> None:
    records = mixed_records(12)
    await log.write(records)
    page, cursor = await log.query(RecordQuery())
    assert cursor is None
    assert [row["id"] for row in page] == newest_first(records)
    for row in page:
        assert BODY_KEYS.isdisjoint(row)
        assert row["created_at"].endswith("+00:00")
        assert isinstance(row["stream"], bool)
    assert page[-1]["findings"] == records[0].findings
    assert page[-1]["rules"] == {"orphan_tool_result": 1}


@pytest.mark.parametrize("limit", [1, 4, 7, 30])
async def test_pages_have_no_duplicates_and_no_gaps(log: RepairLog, limit: int) -> None:
    records = mixed_records(30)
    await log.write(records)
    rows = await all_pages(log, limit)
    assert [row["id"] for row in rows] == newest_first(records)


FILTERS: list[dict[str, Any]] = [
    {"upstream": "gemini"},
    {"model": "deepseek-chat"},
    {"outcome": "warned"},
    {"rule": "missing_tool_result"},
    {"rule": "orphan_tool_result", "upstream": "openai"},
    {"rule": "orphan_tool_result", "outcome": "repaired", "model": "gpt-4o"},
    {"upstream": "deepseek", "outcome": "rejected"},
    {"upstream": "nobody"},
]


def matches(record: Record, filters: dict[str, Any]) -> bool:
    rules = {f["rule"] for f in record.findings}
    return all(
        value in rules if name == "rule" else getattr(record, name) == value
        for name, value in filters.items()
    )


@pytest.mark.parametrize(
    "filters", FILTERS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items())
)
async def test_filters_across_pages(log: RepairLog, filters: dict[str, Any]) -> None:
    records = mixed_records(40)
    await log.write(records)
    rows = await all_pages(log, 3, **filters)
    expected = newest_first([r for r in records if matches(r, filters)])
    assert [row["id"] for row in rows] == expected


async def test_since_is_inclusive_and_until_exclusive(log: RepairLog) -> None:
    records = [make_record(n) for n in range(10)]
    await log.write(records)
    since, until = T0 + timedelta(seconds=3), T0 + timedelta(seconds=7)
    rows = await all_pages(log, 2, since=since, until=until)
    assert [row["id"] for row in rows] == newest_first(records[3:7])
    ruled = await all_pages(log, 2, since=since, until=until, rule="orphan_tool_result")
    assert [row["id"] for row in ruled] == newest_first(records[3:7])


async def test_naive_and_offset_times_are_utc(log: RepairLog) -> None:
    records = [make_record(n) for n in range(4)]
    await log.write(records)
    naive = (T0 + timedelta(seconds=2)).replace(tzinfo=None)
    shifted = (T0 + timedelta(seconds=2)).astimezone(timezone(timedelta(hours=-5)))
    for since in (naive, shifted):
        page, _ = await log.query(RecordQuery(since=since))
        assert [row["id"] for row in page] == newest_first(records[2:])


async def test_stats_count_by_outcome_rule_upstream_error_kind_and_ending(log: RepairLog) -> None:
    records = mixed_records(12)
    await log.write(records)
    stats = await log.stats(None)
    assert stats == {
        "total": 12,
        "since": None,
        "by_outcome": {"repaired": 3, "rejected": 3, "warned": 3, "upstream_rejected": 3},
        "by_rule": {"orphan_tool_result": 8, "missing_tool_result": 4},
        "by_upstream": {"openai": 4, "deepseek": 4, "gemini": 4},
        "by_error_kind": {"missing_tool_result": 3},
        "by_ending": {"complete": 8, "upstream_cut": 2, "client_gone": 2},
        "repeats": 0,
    }
    since = T0 + timedelta(seconds=9)  # records 9, 10, 11 (11 shares second 10)
    later = await log.stats(since)
    assert later["total"] == 3
    assert later["since"] == "2025-03-01T12:00:09.000000+00:00"
    assert later["by_upstream"] == {"openai": 1, "deepseek": 1, "gemini": 1}
    assert later["by_rule"] == {"orphan_tool_result": 2, "missing_tool_result": 1}


async def test_a_batch_larger_than_one_statement_is_written_whole(log: RepairLog) -> None:
    """SQLite writes a batch in multi-row statements of a bounded size: 130 records (and 260
    rule rows) take several, and none of them may lose or repeat a row."""
    rules = ("orphan_tool_result", "missing_tool_result")
    records = [make_record(n, rules=rules) for n in range(130)]
    await log.write(records)
    stats = await log.stats(None)
    assert stats["total"] == 130
    assert stats["by_rule"] == {"orphan_tool_result": 130, "missing_tool_result": 130}
    rows = await all_pages(log, 100)
    assert [row["id"] for row in rows] == newest_first(records)


async def test_empty_log_stats(log: RepairLog) -> None:
    stats = await log.stats(None)
    assert stats["total"] == 0
    assert stats["by_outcome"] == stats["by_rule"] == stats["by_upstream"] == {}


async def test_delete_before_counts_and_removes_everywhere(log: RepairLog) -> None:
    records = [make_record(n) for n in range(10)]
    await log.write(records)
    deleted = await log.delete(T0 + timedelta(seconds=6))
    assert deleted == 6
    page, _ = await log.query(RecordQuery(rule="orphan_tool_result"))
    assert [row["id"] for row in page] == newest_first(records[6:])
    assert await log.get(records[0].id) is None
    assert (await log.stats(None))["by_rule"] == {"orphan_tool_result": 4}
    assert await log.delete(T0) == 0


async def test_prune_by_age(log: RepairLog) -> None:
    now = utcnow()
    old = [make_record(n, at=now - timedelta(days=40, seconds=n)) for n in range(3)]
    fresh = [make_record(n, at=now - timedelta(days=1, seconds=n)) for n in range(2)]
    await log.write(old + fresh)
    assert await log.prune(30, 1000) == 3
    page, _ = await log.query(RecordQuery())
    assert {row["id"] for row in page} == {r.id for r in fresh}
    assert (await log.stats(None))["by_rule"] == {"orphan_tool_result": 2}


async def test_prune_by_count_keeps_the_newest(log: RepairLog) -> None:
    records = mixed_records(10)
    await log.write(records)
    assert await log.prune(1e9, 4) == 6  # an age beyond the calendar prunes nothing by age
    page, _ = await log.query(RecordQuery())
    assert [row["id"] for row in page] == newest_first(records)[:4]
    assert await log.prune(1e9, 4) == 0


async def test_ping_answers_on_a_working_log(log: RepairLog) -> None:
    await log.ping()


async def test_records_survive_a_restart(make_durable_log: Callable[[], RepairLog]) -> None:
    records = mixed_records(5)
    first = make_durable_log()
    await first.open()
    await first.write(records)
    await first.close()
    again = make_durable_log()
    await again.open()
    try:
        page, _ = await again.query(RecordQuery())
        assert [row["id"] for row in page] == newest_first(records)
        got = await again.get(records[0].id)
        assert got is not None
        assert got["received"] == records[0].received
    finally:
        await again.close()


async def test_a_second_instance_shares_the_migrated_store(
    make_durable_log: Callable[[], RepairLog],
) -> None:
    first, second = make_durable_log(), make_durable_log()  # two replicas of the proxy
    await first.open()
    await second.open()  # migrates nothing twice, breaks nothing
    try:
        record, newer = make_record(0), make_record(1)
        await first.write([record])
        await second.ping()
        assert await second.get(record.id) is not None
        await second.write([newer])
        assert await first.get(newer.id) is not None
    finally:
        await first.close()
        await second.close()
