"""SQLite backend: stdlib ``sqlite3`` in WAL mode, one writer thread, a small reader pool.

Every write (records, deletes, retention, migrations) runs on the single writer thread, so the
event loop never waits on disk and writers never contend. Reads run on their own threads with
their own connections (WAL lets them proceed while a write is in progress).

A connection is re-opened when the file at the path is no longer the one it holds (deleted or
replaced): otherwise a process whose database was removed would keep writing into the void.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import orjson

from proxy.errors import RepairLogUnavailable
from proxy.repairlog import payloads
from proxy.repairlog.base import RecordQuery, iso
from proxy.repairlog.batch import Batch, Memory
from proxy.repairlog.record import Record
from proxy.repairlog.rows import STORED_FIELDS, cutoff_for
from proxy.repairlog.sql import (
    OLDEST,
    SECRET_INSERT,
    SECRET_SELECT,
    Dialect,
    kept_since,
    page_of,
    stats_from,
)
from proxy.repairlog.sqlite_conn import (
    Handle,
    guarded,
    insert_many,
    run_on,
    select_in,
    transaction,
)

P = ParamSpec("P")
T = TypeVar("T")

DIALECT = Dialect("sqlite", "?", iso, lambda column: column)
INSERT = f"INSERT OR IGNORE INTO records ({', '.join(STORED_FIELDS)}) VALUES "
INSERT_TURN = f"INSERT OR IGNORE INTO turns ({', '.join(STORED_FIELDS)}) VALUES "
INSERT_RULE = "INSERT OR IGNORE INTO record_rules VALUES "
INSERT_PAYLOAD = "INSERT OR IGNORE INTO payloads (digest, last_used, body) VALUES "
JSON_COLUMNS = frozenset({"rules", "findings", "received", "forwarded", "attempts"})
#: How long a readiness ping waits for the database's write lock: a database locked longer is
#: reported ("database is locked"), not waited on (``/readyz`` itself gives up after 2 s).
PING_BUSY_TIMEOUT = 0.25


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


def _blobs(conn: sqlite3.Connection, digests: set[bytes]) -> dict[bytes, bytes]:
    sql = "SELECT digest, body FROM payloads WHERE digest IN "
    return {
        digest: payloads.read_blob(body) for digest, body in select_in(conn, sql, list(digests))
    }


def _last_used(conn: sqlite3.Connection, digests: list[bytes]) -> dict[bytes, int]:
    """The stored digests among ``digests``, with their ``last_used``."""
    sql = "SELECT digest, last_used FROM payloads WHERE digest IN "
    return dict(select_in(conn, sql, digests))


class SQLiteRepairLog:
    """The default repair log: one file, see the module docstring."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._writer: ThreadPoolExecutor | None = None
        self._readers: ThreadPoolExecutor | None = None
        self._write_handle = Handle(self.path, writer=True)
        self._read_handles: list[Handle] = []
        self._local = threading.local()
        self._memory = Memory()  # the writer thread's
        self._stored_in: sqlite3.Connection | None = None  # the connection it was learnt on

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
        return await self._on_reader(self._get_sync, record_id)

    async def query(self, q: RecordQuery) -> tuple[list[dict[str, Any]], str | None]:
        sql, params = DIALECT.page(q)
        return page_of(await self._on_reader(self._page_sync, sql, params), q.limit)

    async def stats(self, since: datetime | None, owner: str | None = None) -> dict[str, Any]:
        return await self._on_reader(self._stats_sync, since, owner)

    async def capture_key(self) -> bytes:
        return await self._on_writer(self._secret_sync, "capture")

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
        await asyncio.to_thread(guarded, None, self._ping_sync)

    # -- on the writer thread ------------------------------------------------------------

    def _open_sync(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_handle.get()

    def _write_sync(self, records: list[Record]) -> None:
        conn = self._write_handle.get()
        if conn is not self._stored_in:  # a file opened anew may not hold what the old held
            self._memory.forget_stored()
            self._stored_in = conn
        batch = Batch(records, self._memory)
        with transaction(conn):
            known = {}
            for key in batch.lookups():
                row = conn.execute(DIALECT.first(), list(key)).fetchone()
                if row is not None:
                    known[key] = row[0]
            firsts, turns, rules = batch.rows(known, iso, bytes)
            insert_many(conn, INSERT, firsts)
            insert_many(conn, INSERT_TURN, turns)
            insert_many(conn, INSERT_RULE, rules)
            writes = batch.payloads(_last_used(conn, batch.unsure()))
            insert_many(conn, INSERT_PAYLOAD, writes.rows)
            touch = "UPDATE payloads SET last_used = ? WHERE digest IN "
            select_in(conn, touch, writes.stale, [batch.latest])
            conn.executemany(DIALECT.bump(), batch.bumps(iso))
        batch.committed()

    def _delete_sync(self, where: str, params: list[Any]) -> int:
        """Delete the records ``where`` names, then the payloads no kept record references."""
        conn = self._write_handle.get()
        with transaction(conn):
            doomed = f"SELECT id FROM records WHERE {where}"
            conn.execute(f"DELETE FROM record_rules WHERE record_id IN ({doomed})", params)
            deleted = conn.execute(f"DELETE FROM records WHERE {where}", params).rowcount
            deleted += conn.execute(f"DELETE FROM turns WHERE {where}", params).rowcount
            if deleted:
                self._memory.forget_stored()
                oldest = conn.execute(OLDEST).fetchone()[0]
                kept = kept_since(None if oldest is None else datetime.fromisoformat(oldest))
                conn.execute(DIALECT.collect(), [kept])
            return deleted

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

    def _page_sync(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        conn = self._reader_conn()
        rows = _dicts(conn.execute(sql, params))
        refs = payloads.findings_refs(rows)
        if refs:
            payloads.unpack_findings(rows, _blobs(conn, refs))
        return rows

    def _get_sync(self, record_id: str) -> dict[str, Any] | None:
        conn = self._reader_conn()
        conn.execute("BEGIN")  # one snapshot: retention cannot take a payload between reads
        try:
            rows = _dicts(conn.execute(DIALECT.record(), [record_id]))
            rows = rows or _dicts(conn.execute(DIALECT.record("turns"), [record_id]))
            if not rows:
                return None
            row = rows[0]
            if row.pop("packed"):
                bodies = payloads.skeletons(row)
                blobs = _blobs(conn, payloads.chunk_refs(bodies))
                blobs.update(_blobs(conn, payloads.leaf_refs(bodies, blobs)))
                payloads.unpack_record(row, blobs)
            return row
        finally:
            conn.execute("COMMIT")

    def _secret_sync(self, name: str) -> bytes:
        conn = self._write_handle.get()
        with transaction(conn):
            conn.execute(SECRET_INSERT.format(ph="?"), [name, os.urandom(32)])
            value: bytes = conn.execute(SECRET_SELECT.format(ph="?"), [name]).fetchone()[0]
        return value

    def _stats_sync(self, since: datetime | None, owner: str | None) -> dict[str, Any]:
        conn = self._reader_conn()
        queries, params = DIALECT.stats(since, owner)
        return stats_from(
            since, {group: conn.execute(sql, params).fetchall() for group, sql in queries}
        )

    # -- dispatch ------------------------------------------------------------------------

    async def _on_writer(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await run_on(self._writer, self._write_handle, fn, *args, **kwargs)

    async def _on_reader(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await run_on(self._readers, None, fn, *args, **kwargs)
