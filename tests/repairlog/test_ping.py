"""Readiness checks the log without occupying its writer (issue 26 item 3): a SQLite ping has
its own short-lived connection and thread; a locked database (SQLite) or table (PostgreSQL) is
reported, not waited on."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest

from proxy.repairlog import RepairLogUnavailable
from proxy.repairlog.postgres import PostgresRepairLog
from proxy.repairlog.sqlite import PING_BUSY_TIMEOUT, SQLiteRepairLog
from tests.repairlog.records import make_record

pytestmark = pytest.mark.anyio


@pytest.fixture
async def log(tmp_path: Path) -> AsyncIterator[SQLiteRepairLog]:
    repair_log = SQLiteRepairLog(tmp_path / "r.sqlite3")
    await repair_log.open()
    yield repair_log
    await repair_log.close()


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Another process's transaction holding the database's write lock."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


async def test_a_locked_database_is_reported_at_once(log: SQLiteRepairLog) -> None:
    with locked(log.path):
        started = time.perf_counter()
        with pytest.raises(RepairLogUnavailable, match="locked"):
            await log.ping()
        assert time.perf_counter() - started < PING_BUSY_TIMEOUT + 0.5
    await log.ping()  # unlocked: ready again


async def test_pings_leave_the_writer_free(log: SQLiteRepairLog) -> None:
    """While pings meet a locked database, the writer's thread takes other work at once: the
    pings never queue on it (before, each one held it for the whole 5 s lock wait)."""
    assert log._writer is not None
    with locked(log.path):
        pings = [asyncio.create_task(log.ping()) for _ in range(5)]
        await asyncio.sleep(0.05)  # the pings are waiting on the lock now
        free = log._writer.submit(lambda: "free")
        assert await asyncio.wait_for(asyncio.wrap_future(free), PING_BUSY_TIMEOUT / 2) == "free"
        results = await asyncio.gather(*pings, return_exceptions=True)
    assert all(isinstance(r, RepairLogUnavailable) for r in results)
    record = make_record()
    await log.write([record])  # and the writer writes once the lock is gone
    assert await log.get(record.id) is not None


async def test_a_ping_creates_a_missing_database_like_the_writer(tmp_path: Path) -> None:
    repair_log = SQLiteRepairLog(tmp_path / "r.sqlite3")
    await repair_log.open()
    try:
        repair_log.path.unlink()  # the file went away: the ping brings it back, migrated
        await repair_log.ping()
        with contextlib.closing(sqlite3.connect(repair_log.path)) as conn:
            assert conn.execute("SELECT count(*) FROM records").fetchone() == (0,)
    finally:
        await repair_log.close()


@pytest.mark.postgres
async def test_a_locked_postgres_table_is_reported_at_once(pg_url: str) -> None:
    repair_log = PostgresRepairLog(pg_url)
    await repair_log.open()
    try:
        with psycopg.connect(pg_url) as holder:  # a migration of someone else's, say
            holder.execute("LOCK TABLE records IN ACCESS EXCLUSIVE MODE")
            started = time.perf_counter()
            with pytest.raises(RepairLogUnavailable, match="lock timeout"):
                await repair_log.ping()
            assert time.perf_counter() - started < 1.5
        await repair_log.ping()  # the lock is gone with its transaction: ready again
    finally:
        await repair_log.close()
