"""A store written by the previous schema version opens under this one: migrated in place, its
records readable as they were (what they never held reads as null), new ones written whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from proxy.repairlog import RecordQuery, RepairLog, open_repair_log
from proxy.repairlog.sqlite_conn import _statements
from proxy.repairlog.tables import migrations
from tests.repairlog.records import make_record

pytestmark = pytest.mark.anyio

#: The last version before how answers ended was kept (migration 003 adds ``ending``).
BEFORE_ENDINGS = 2
OLD_ID = "01900000-0000-7000-8000-000000000001"
#: A row as version 2 wrote it: no ``ending`` column yet.
OLD_ROW = (
    "INSERT INTO records (id, created_at, upstream, model, path, stream, outcome, rules, "
    "findings, status) VALUES ({ph}, {ph}, 'openai', 'gpt-4o', '/v1/chat/completions', {no}, "
    "'repaired', '{{}}', '[]', 200)"
)


def _sqlite_v2(path: Path) -> None:
    with sqlite3.connect(path, isolation_level=None) as conn:
        for number, script in migrations("sqlite")[:BEFORE_ENDINGS]:
            for statement in _statements(script):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
        row = OLD_ROW.format(ph="?", no=0)
        conn.execute(row, [OLD_ID, "2025-01-01T00:00:00.000000+00:00"])
    conn.close()


def _postgres_v2(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE toolcall_guard_schema"
            " (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for number, script in migrations("postgres")[:BEFORE_ENDINGS]:
            conn.execute(script.encode())
            conn.execute("INSERT INTO toolcall_guard_schema (version) VALUES (%s)", [number])
        row = OLD_ROW.format(ph="%s", no="false")
        conn.execute(row.encode(), [OLD_ID, "2025-01-01T00:00:00Z"])


@pytest.fixture(
    params=[pytest.param("sqlite"), pytest.param("postgres", marks=pytest.mark.postgres)]
)
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a store at schema version 2 holding one record."""
    if request.param == "sqlite":
        path = tmp_path / "v2.sqlite3"
        _sqlite_v2(path)
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("pg_url")
    _postgres_v2(url)
    return url


async def test_a_version_2_store_gains_endings_and_keeps_its_records(old_store: str) -> None:
    log: RepairLog = open_repair_log(old_store)
    await log.open()
    try:
        new = make_record(ending="upstream_timeout")
        await log.write([new])  # the writer opens (and migrates) the store on its first batch
        old = await log.get(OLD_ID)
        assert old is not None
        assert (old["status"], old["ending"]) == (200, None)  # not known: never claimed whole
        got = await log.get(new.id)
        assert got is not None
        assert got["ending"] == "upstream_timeout"
        page, _ = await log.query(RecordQuery(ending="upstream_timeout"))
        assert [row["id"] for row in page] == [new.id]
    finally:
        await log.close()
