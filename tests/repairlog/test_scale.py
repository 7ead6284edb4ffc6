"""100,000 records: every page query walks an index in page order (no scan, no sort per page).

The rows are generated inside the database (it is the reading side that is under test here;
the write path has its own tests). Query plans are asserted, not timings: timings belong to
``make bench``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from proxy.repairlog import RecordQuery, RepairLog, open_repair_log
from proxy.repairlog import postgres as pg_backend
from proxy.repairlog import sqlite as sqlite_backend
from proxy.repairlog.base import encode_cursor

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

N = 100_000
OUTCOMES = ("repaired", "rejected", "warned", "upstream_rejected")
UPSTREAMS = ("openai", "deepseek", "gemini")
QUERIES = [
    RecordQuery(),
    RecordQuery(upstream="gemini"),
    RecordQuery(outcome="warned"),
    RecordQuery(model="m7"),
    RecordQuery(rule="orphan_tool_result"),
    RecordQuery(rule="missing_tool_result", upstream="openai", outcome="repaired"),
    RecordQuery(outcome="rejected", upstream="deepseek"),
    RecordQuery(cursor=encode_cursor("2025-01-01T10:00:00.000000+00:00", "000000050000")),
    RecordQuery(
        rule="orphan_tool_result",
        cursor=encode_cursor("2025-01-01T10:00:00.000000+00:00", "000000050000"),
    ),
]

SQLITE_FILL = f"""
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {N})
INSERT INTO records
SELECT printf('%012d', n),
       strftime('%Y-%m-%dT%H:%M:%S', '2025-01-01', '+' || (n / 2) || ' seconds')
           || '.000000+00:00',
       CASE n % 3 WHEN 0 THEN 'openai' WHEN 1 THEN 'deepseek' ELSE 'gemini' END,
       'm' || (n % 10), '/v1/chat/completions', 0,
       CASE n % 4 WHEN 0 THEN 'repaired' WHEN 1 THEN 'rejected' WHEN 2 THEN 'warned'
            ELSE 'upstream_rejected' END,
       NULL, NULL, NULL, NULL, NULL, NULL,
       CASE n % 5 WHEN 0 THEN '{{"missing_tool_result":1}}' ELSE '{{"orphan_tool_result":1}}' END,
       '[]', NULL, '{{}}', NULL,
       NULL, NULL, NULL,  -- status, proxy_error, attempts (migration 002)
       NULL,  -- ending (migration 003)
       NULL, NULL, NULL, 0, NULL, NULL, NULL,  -- conversation … packed (migration 004)
       NULL  -- owner (migration 005)
FROM g;
INSERT INTO record_rules
SELECT CASE n % 5 WHEN 0 THEN 'missing_tool_result' ELSE 'orphan_tool_result' END,
       created_at, id, 1
FROM (SELECT CAST(id AS INTEGER) AS n, id, created_at FROM records);
"""

PG_FILL = f"""
SET session_replication_role = replica;  -- generated rows are consistent: skip per-row FK checks
INSERT INTO records
SELECT lpad(n::text, 12, '0'), '2025-01-01T00:00:00Z'::timestamptz + (n / 2) * interval '1 s',
       (ARRAY['deepseek', 'gemini', 'openai'])[n % 3 + 1], 'm' || (n % 10),
       '/v1/chat/completions', false,
       (ARRAY['rejected', 'warned', 'upstream_rejected', 'repaired'])[n % 4 + 1],
       NULL, NULL, NULL, NULL, NULL, NULL,
       CASE n % 5 WHEN 0 THEN '{{"missing_tool_result":1}}' ELSE '{{"orphan_tool_result":1}}'
       END::json, '[]', NULL, '{{}}', NULL,
       NULL, NULL, NULL,  -- status, proxy_error, attempts (migration 002)
       NULL,  -- ending (migration 003)
       NULL, NULL, NULL, 0, NULL, NULL, NULL,  -- conversation … packed (migration 004)
       NULL  -- owner (migration 005)
FROM generate_series(1, {N}) AS n;
INSERT INTO record_rules
SELECT CASE id::bigint % 5 WHEN 0 THEN 'missing_tool_result' ELSE 'orphan_tool_result' END,
       created_at, id, 1
FROM records;
RESET session_replication_role;
ANALYZE records;
ANALYZE record_rules;
"""


@pytest.fixture(
    params=[pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def big(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, Any]]:
    """(backend, a connection string or path) of a log holding N generated records."""
    if request.param == "sqlite":
        path = tmp_path / "big.sqlite3"
        url, target = f"sqlite:///{path}", str(path)
    else:
        url = target = request.getfixturevalue("pg_url")
    log = open_repair_log(url)
    await log.open()  # creates the schema
    if request.param == "sqlite":
        with sqlite3.connect(target) as conn:
            conn.executescript(SQLITE_FILL)
    else:
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(PG_FILL.encode())
    request.node.stash[LOG_KEY] = log
    yield request.param, target
    await log.close()


LOG_KEY = pytest.StashKey[RepairLog]()


def sqlite_plan(path: str, q: RecordQuery) -> list[str]:
    sql, params = sqlite_backend.DIALECT.page(q)
    with sqlite3.connect(path) as conn:
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


def pg_plan(url: str, q: RecordQuery) -> str:
    sql, params = pg_backend.DIALECT.page(q)
    with psycopg.connect(url) as conn:
        rows = conn.execute(b"EXPLAIN " + sql.encode(), params).fetchall()
    return "\n".join(row[0] for row in rows)


async def test_a_large_log_pages_by_index(
    big: tuple[str, Any], request: pytest.FixtureRequest
) -> None:
    backend, target = big
    for q in QUERIES:
        if backend == "sqlite":
            steps = sqlite_plan(target, q)
            assert not any("TEMP B-TREE" in step for step in steps), (q, steps)
            for step in steps:
                assert step.startswith("SEARCH") or "USING" in step, (q, steps)
        else:
            plan = pg_plan(target, q)
            assert "Seq Scan" not in plan, (q, plan)
            assert "Sort" not in plan, (q, plan)

    log = request.node.stash[LOG_KEY]
    stats = await log.stats(None)
    assert stats["total"] == N
    assert stats["by_rule"] == {"orphan_tool_result": N * 4 // 5, "missing_tool_result": N // 5}
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = await log.query(RecordQuery(outcome="warned", limit=500, cursor=cursor))
        seen += [row["id"] for row in page]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == N // 4
    assert seen == sorted(seen, reverse=True)  # ids follow created_at here
    # The cursor names 10:00:00 = second 36000 = records 72000 and 72001 (ids above the
    # cursor's id, so not after it): the page starts at 71995, the next n % 5 == 0 below.
    deep, _ = await log.query(
        RecordQuery(rule="missing_tool_result", limit=3, cursor=QUERIES[-1].cursor)
    )
    assert [row["id"] for row in deep] == ["000000071995", "000000071990", "000000071985"]
