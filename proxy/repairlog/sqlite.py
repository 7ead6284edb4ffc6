"""SQLite backend: stdlib ``sqlite3`` in WAL mode, one writer thread, a small reader pool.

Every write (records, deletes, retention, migrations) runs on the single writer thread, so the
event loop never waits on disk and writers never contend. Reads run on their own threads with
their own connections (WAL lets them proceed while a write is in progress).

A connection is re-opened when the file at the path is no longer the one it holds (deleted or
replaced): otherwise a process whose database was removed would keep writing into the void.
"""

from __future__ import annotations

import asyncio
import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import orjson

from proxy.repairlog.base import (
    ALL_FIELDS,
    RecordQuery,
    RepairLogError,
    RepairLogUnavailable,
    empty_stats,
    iso,
)
from proxy.repairlog.record import Record
from proxy.repairlog.rows import cutoff_for, record_row, rule_rows
from proxy.repairlog.sql import Dialect, get_sql, page_of, page_sql, stats_sql
from proxy.repairlog.sqlite_conn import Handle, transaction

P = ParamSpec("P")
T = TypeVar("T")

DIALECT = Dialect("sqlite", "?", iso, lambda column: column)
INSERT = f"INSERT OR IGNORE INTO records ({', '.join(ALL_FIELDS)}) VALUES "
INSERT_RULE = "INSERT OR IGNORE INTO record_rules VALUES "
#: Bound parameters per statement: SQLite's historic minimum limit (SQLITE_MAX_VARIABLE_NUMBER).
MAX_VARIABLES = 999
JSON_COLUMNS = frozenset({"rules", "findings", "received", "forwarded", "attempts"})
#: How long a readiness ping waits for the database's write lock: a database locked longer is
#: reported ("database is locked"), not waited on (``/readyz`` itself gives up after 2 s).
PING_BUSY_TIMEOUT = 0.25


def _insert_many(conn: sqlite3.Connection, insert: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert ``rows`` with a few multi-row statements rather than one statement per row.

    Each statement releases and takes back the GIL: while the event loop keeps the GIL busy
    (a proxy under load), every take-back waits up to the switch interval (5 ms), which made
    ``executemany`` write ~50 records a second where this writes hundreds.
    """
    if not rows:
        return
    width = len(rows[0])
    per_statement = MAX_VARIABLES // width
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        values = ", ".join(["(" + ", ".join("?" * width) + ")"] * len(chunk))
        conn.execute(insert + values, [value for row in chunk for value in row])


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description]
    out = []
    for row in cursor:
        item = dict(zip(names, row, strict=True))
        for name in JSON_COLUMNS.intersection(item):
            value = item[name]
            item[name] = None if value is None else orjson.loads(value)
        item["stream"] = bool(item["stream"])
        out.append(item)
    return out


class SQLiteRepairLog:
    """The default repair log: one file, see the module docstring."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._writer: ThreadPoolExecutor | None = None
        self._readers: ThreadPoolExecutor | None = None
        self._write_handle = Handle(self.path, writer=True)
        self._read_handles: list[Handle] = []
        self._local = threading.local()

    async def open(self) -> None:
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="repairlog-sqlite-writer")
            self._readers = ThreadPoolExecutor(2, thread_name_prefix="repairlog-sqlite-reader")
        await self._on_writer(self._open_sync)

    async def close(self) -> None:
        writer, readers = self._writer, self._readers
        if writer is None or readers is None:
            return
        self._writer = self._readers = None
        writer.submit(self._write_handle.drop)
        await asyncio.to_thread(writer.shutdown)
        await asyncio.to_thread(readers.shutdown)
        for handle in self._read_handles:
            handle.drop()
        self._read_handles.clear()

    async def write(self, records: Sequence[Record]) -> None:
        if records:
            await self._on_writer(self._write_sync, list(records))

    async def get(self, record_id: str) -> dict[str, Any] | None:
        rows = await self._on_reader(self._select, get_sql(DIALECT), [record_id])
        return rows[0] if rows else None

    async def query(self, q: RecordQuery) -> tuple[list[dict[str, Any]], str | None]:
        sql, params = page_sql(q, DIALECT)
        return page_of(await self._on_reader(self._select, sql, params), q.limit)

    async def stats(self, since: datetime | None) -> dict[str, Any]:
        return await self._on_reader(self._stats_sync, since)

    async def delete(self, before: datetime) -> int:
        return await self._on_writer(self._delete_sync, "created_at < ?", [iso(before)])

    async def prune(self, retention_days: float, max_records: int) -> int:
        return await self._on_writer(self._prune_sync, retention_days, max_records)

    async def ping(self) -> None:
        """Check the log can be written on a short-lived connection, in a thread, of its own.

        Never on the writer's thread: a ping waiting on a locked database there would hold up
        every batch queued behind it, exactly while the log is struggling. Like the writer, it
        creates and migrates a database file that is missing from its directory (so readiness
        recovers without traffic); a directory that is gone stays gone.
        """
        if self._writer is None:
            raise RepairLogUnavailable("the repair log is not open")
        await asyncio.to_thread(_guarded, None, self._ping_sync)

    # -- on the writer thread ------------------------------------------------------------

    def _open_sync(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_handle.get()

    def _write_sync(self, records: list[Record]) -> None:
        rows = [record_row(r, iso, bytes) for r in records]
        rules = [row for r in records for row in rule_rows(r, iso)]
        conn = self._write_handle.get()
        with transaction(conn):
            _insert_many(conn, INSERT, rows)
            _insert_many(conn, INSERT_RULE, rules)

    def _delete_sync(self, where: str, params: list[Any]) -> int:
        conn = self._write_handle.get()
        with transaction(conn):
            doomed = f"SELECT id FROM records WHERE {where}"
            conn.execute(f"DELETE FROM record_rules WHERE record_id IN ({doomed})", params)
            return conn.execute(f"DELETE FROM records WHERE {where}", params).rowcount

    def _prune_sync(self, retention_days: float, max_records: int) -> int:
        deleted = 0
        cutoff = cutoff_for(retention_days)
        if cutoff is not None:
            deleted += self._delete_sync("created_at < ?", [iso(cutoff)])
        conn = self._write_handle.get()
        oldest_kept = conn.execute(
            "SELECT created_at, id FROM records ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?",
            [max_records - 1],
        ).fetchone()
        if oldest_kept is not None:
            deleted += self._delete_sync("(created_at, id) < (?, ?)", list(oldest_kept))
        return deleted

    # -- on a ping's own thread ----------------------------------------------------------

    def _ping_sync(self) -> None:
        handle = Handle(self.path, writer=True, busy_timeout=PING_BUSY_TIMEOUT)
        try:
            conn = handle.get()
            with transaction(conn):  # takes the write lock: a locked database says so here
                conn.execute("SELECT 1 FROM records LIMIT 0")
        finally:
            handle.drop()

    # -- on a reader thread --------------------------------------------------------------

    def _reader_conn(self) -> sqlite3.Connection:
        handle = getattr(self._local, "handle", None)
        if handle is None:
            handle = self._local.handle = Handle(self.path, writer=False)
            self._read_handles.append(handle)
        try:
            return handle.get()
        except BaseException:
            handle.drop()
            raise

    def _select(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        return _dicts(self._reader_conn().execute(sql, params))

    def _stats_sync(self, since: datetime | None) -> dict[str, Any]:
        conn = self._reader_conn()
        stats = empty_stats(since)
        queries, params = stats_sql(DIALECT, since)
        for group, sql in queries:
            stats[group] = {key: count for key, count in conn.execute(sql, params)}
        stats["total"] = sum(stats["by_outcome"].values())
        return stats

    # -- dispatch ------------------------------------------------------------------------

    async def _on_writer(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(self._writer, self._write_handle, fn, *args, **kwargs)

    async def _on_reader(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(self._readers, None, fn, *args, **kwargs)

    async def _run(
        self,
        pool: ThreadPoolExecutor | None,
        handle: Handle | None,
        fn: Callable[P, T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        if pool is None:
            raise RepairLogUnavailable("the repair log is not open")
        job = functools.partial(_guarded, handle, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(pool, job)


def _guarded(handle: Handle | None, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn``; a database or file error drops the writer's connection (the next call
    re-opens it) and becomes :class:`RepairLogUnavailable`, except an error about the data
    itself (trying it again cannot help): that one is a plain :class:`RepairLogError`."""
    try:
        return fn(*args, **kwargs)
    except (sqlite3.Error, OSError) as exc:
        if handle is not None:
            handle.drop()
        if isinstance(exc, sqlite3.DataError | sqlite3.IntegrityError):
            raise RepairLogError(f"sqlite: {exc}") from exc
        raise RepairLogUnavailable(f"sqlite: {exc}") from exc
