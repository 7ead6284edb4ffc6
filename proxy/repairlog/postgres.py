"""PostgreSQL backend: psycopg 3 async with a ``psycopg_pool`` pool (``toolcall-guard[postgres]``).

Several proxy replicas may share one database: migrations run under an advisory lock, inserts
ignore ids already present. When the server goes away, the pool is dropped and the next call
connects afresh (a direct connection first, so an unreachable server fails fast instead of
waiting out the pool's retry loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from functools import partial
from typing import Any

import orjson
import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from proxy.errors import RepairLogError, RepairLogUnavailable
from proxy.repairlog.base import RecordQuery, empty_stats, iso
from proxy.repairlog.carry import Sequences, StoredDigests
from proxy.repairlog.conversation import RepeatKey, assign_repeats, repeat_keys
from proxy.repairlog.packing import Packer
from proxy.repairlog.payloads import (
    chunk_refs,
    findings_refs,
    leaf_refs,
    read_blob,
    skeletons,
    unpack_bodies,
    unpack_findings,
)
from proxy.repairlog.record import Record
from proxy.repairlog.rows import STORED_FIELDS, cutoff_for, record_row, rule_rows
from proxy.repairlog.sql import (
    OLDEST,
    TRUSTED_FOR,
    Dialect,
    bump_sql,
    collect_sql,
    epoch,
    first_sql,
    get_sql,
    kept_since,
    page_of,
    page_sql,
    payload_writes,
    stats_sql,
)
from proxy.repairlog.tables import migrations


def _ts(moment: datetime) -> datetime:
    return moment


DIALECT = Dialect("postgres", "%s", _ts, lambda column: f"{column}::text AS {column[2:]}")
JSON_COLUMNS = frozenset({"rules", "findings", "received", "forwarded", "attempts"})
_VALUES = ", ".join("%s::json" if name in JSON_COLUMNS else "%s" for name in STORED_FIELDS)
INSERT = (
    f"INSERT INTO records ({', '.join(STORED_FIELDS)}) VALUES ({_VALUES}) ON CONFLICT DO NOTHING"
)
INSERT_TURN = (
    f"INSERT INTO turns ({', '.join(STORED_FIELDS)}) VALUES ({_VALUES}) ON CONFLICT DO NOTHING"
)
INSERT_RULE = "INSERT INTO record_rules VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
INSERT_PAYLOAD = (
    "INSERT INTO payloads (digest, last_used, body) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
)
LAST_USED = "SELECT digest, last_used FROM payloads WHERE digest = ANY(%s)"
TOUCH = "UPDATE payloads SET last_used = %s WHERE digest = ANY(%s)"
SELECT_BLOBS = "SELECT digest, body FROM payloads WHERE digest = ANY(%s)"
MIGRATION_LOCK = 0x7463_6700  # "tcg": one advisory lock key for the repair-log migrations
CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, PoolClosed)

Pool = AsyncConnectionPool[psycopg.AsyncConnection[Any]]


async def _migrate(conn: psycopg.AsyncConnection[Any]) -> None:
    """Apply the migrations (:mod:`.tables`) newer than the recorded version."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK])
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS toolcall_guard_schema"
            " (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cur = await conn.execute("SELECT coalesce(max(version), 0) FROM toolcall_guard_schema")
        row = await cur.fetchone()
        version = row[0] if row else 0
        steps = migrations("postgres")
        if steps and version > steps[-1][0]:
            raise RepairLogError(f"schema version {version} is newer than this toolcall-guard")
        for number, script in steps:
            if number > version:
                await conn.execute(script.encode())
                await conn.execute(
                    "INSERT INTO toolcall_guard_schema (version) VALUES (%s)", [number]
                )


def _loaded(row: dict[str, Any]) -> dict[str, Any]:
    row["created_at"] = iso(row["created_at"])
    if row.get("last_seen") is not None:
        row["last_seen"] = iso(row["last_seen"])
    for name in JSON_COLUMNS.intersection(row):
        value = row[name]
        row[name] = None if value is None else orjson.loads(value)
    return row


def _text(value: Any) -> Any:
    # PostgreSQL text cannot hold NUL, which a client can put in a model name and an upstream in
    # its error body; JSON columns are unaffected (the serialiser escapes it as \u0000).
    if type(value) is str and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    return value


Rows = list[tuple[Any, ...]]


def _rows(
    records: Sequence[Record], packer: Packer, keys: dict[str, RepeatKey]
) -> tuple[Rows, Rows, Rows]:
    """The rows of a batch's first records, repeats and rules, their bodies packed by
    ``packer`` (off the event loop: packing hashes items)."""
    firsts = [r for r in records if r.repeat_of is None]
    repeats = [r for r in records if r.repeat_of is not None]

    def rows(batch: list[Record]) -> Rows:
        return [tuple(map(_text, record_row(r, _ts, bytes.decode, packer, keys))) for r in batch]

    rules = [row for r in firsts for row in rule_rows(r, _ts)]
    return rows(firsts), rows(repeats), rules


async def _blobs(conn: psycopg.AsyncConnection[Any], digests: set[bytes]) -> dict[bytes, bytes]:
    cur = await conn.execute(SELECT_BLOBS, [list(digests)])
    return {bytes(digest): read_blob(bytes(body)) for digest, body in await cur.fetchall()}


class PostgresRepairLog:
    """A repair log in PostgreSQL; ``url`` is a libpq URL (``postgresql://`` or ``postgres://``).

    ``timeout`` bounds connecting and waiting for a pooled connection, in seconds.
    """

    def __init__(self, url: str, *, timeout: float = 5.0, max_size: int = 4) -> None:
        self.url = url
        self.timeout = timeout
        self.max_size = max_size
        self._pool: Pool | None = None
        self._lock = asyncio.Lock()
        self._sequences = Sequences()  # one batch at a time (see proxy.repairlog.carry)
        self._stored = StoredDigests(TRUSTED_FOR)

    async def open(self) -> None:
        async with self._connection():
            pass

    async def close(self) -> None:
        async with self._lock:
            await self._drop_pool()

    async def write(self, records: Sequence[Record]) -> None:
        if not records:
            return
        latest = epoch(max(r.created_at for r in records))
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            keys = repeat_keys(records)
            known = {}
            for key in set(keys.values()):
                await cur.execute(first_sql(DIALECT).encode(), list(key))
                row = await cur.fetchone()
                if row is not None:
                    known[key] = row[0]
            bumps = assign_repeats(records, keys, known)
            packer = Packer(self._sequences)
            firsts, turns, rules = await asyncio.to_thread(_rows, records, packer, keys)
            await cur.executemany(INSERT, firsts)
            await cur.executemany(INSERT_TURN, turns)
            await cur.executemany(INSERT_RULE, rules)
            referenced = packer.referenced(partial(self._stored.trusts, now=latest))
            fresh = self._stored.fresh(referenced, latest)
            await cur.execute(LAST_USED, [[d for d in referenced if d not in fresh]])
            stored = {bytes(d): used for d, used in await cur.fetchall()}
            writes = await asyncio.to_thread(
                payload_writes, packer, referenced, {**stored, **fresh}, latest
            )
            await cur.executemany(INSERT_PAYLOAD, writes.rows)
            if writes.stale:
                await cur.execute(TOUCH, [latest, writes.stale])
            for first, (count, seen) in bumps.items():
                await cur.execute(bump_sql(DIALECT).encode(), [count, seen, seen, first])
        self._stored.update(writes.used)  # committed
        packer.confirm(writes.used, self._stored.generation)

    async def get(self, record_id: str) -> dict[str, Any] | None:
        async with self._connection() as conn, conn.transaction():
            # One snapshot: retention cannot take a payload between the reads.
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(get_sql(DIALECT).encode(), [record_id])
                found = await cur.fetchone()
                if found is None:
                    await cur.execute(get_sql(DIALECT, "turns").encode(), [record_id])
                    found = await cur.fetchone()
            if found is None:
                return None
            row = _loaded(found)
            if row.pop("packed"):
                bodies = skeletons(row)
                blobs = await _blobs(conn, chunk_refs(bodies))
                blobs.update(await _blobs(conn, leaf_refs(bodies, blobs)))
                try:
                    unpack_bodies(row, blobs)
                except KeyError as exc:
                    raise RepairLogError(f"record {record_id}: a payload is missing") from exc
            return row

    async def query(self, q: RecordQuery) -> tuple[list[dict[str, Any]], str | None]:
        sql, params = page_sql(q, DIALECT)
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.encode(), params)
            rows = [_loaded(row) for row in await cur.fetchall()]
            refs = findings_refs(rows)
            if refs:
                unpack_findings(rows, await _blobs(conn, refs))
        return page_of(rows, q.limit)

    async def stats(self, since: datetime | None) -> dict[str, Any]:
        stats = empty_stats(since)
        queries, params = stats_sql(DIALECT, since)
        async with self._connection() as conn:
            for group, sql in queries:
                cur = await conn.execute(sql.encode(), params)
                stats[group] = {key: count for key, count in await cur.fetchall()}
        stats["total"] = sum(stats["by_outcome"].values())
        stats["repeats"] = sum(stats["repeats"].values())
        return stats

    async def delete(self, before: datetime) -> int:
        async with self._connection() as conn, conn.transaction():
            cur = await conn.execute("DELETE FROM records WHERE created_at < %s", [before])
            deleted = cur.rowcount
            cur = await conn.execute("DELETE FROM turns WHERE created_at < %s", [before])
            deleted += cur.rowcount
            if deleted:
                await self._collect(conn)
            return deleted

    async def prune(self, retention_days: float, max_records: int) -> int:
        cutoff = cutoff_for(retention_days)
        deleted = 0 if cutoff is None else await self.delete(cutoff)
        async with self._connection() as conn:
            cur = await conn.execute(
                "SELECT created_at, id FROM records ORDER BY created_at DESC, id DESC"
                " OFFSET %s LIMIT 1",
                [max_records - 1],
            )
            oldest_kept = await cur.fetchone()
            if oldest_kept is not None:
                async with conn.transaction():
                    gone = 0
                    for table in ("records", "turns"):
                        cur = await conn.execute(
                            f"DELETE FROM {table} WHERE (created_at, id) < (%s, %s)".encode(),
                            list(oldest_kept),
                        )
                        gone += cur.rowcount
                    if gone:
                        await self._collect(conn)
                deleted += gone
        return deleted

    async def _collect(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Delete the payloads no kept record references (after records were deleted)."""
        self._stored.clear()
        cur = await conn.execute(OLDEST.encode())
        row = await cur.fetchone()
        kept = kept_since(None if row is None else row[0])
        await conn.execute(collect_sql(DIALECT).encode(), [kept])

    async def ping(self) -> None:
        """On a pooled connection beside the writer's; a table someone keeps locked is reported
        (lock timeout) within a quarter second, not waited on."""
        async with self._connection() as conn, conn.transaction():
            await conn.execute("SET LOCAL lock_timeout = '250ms'")
            await conn.execute("SELECT 1 FROM records LIMIT 0")
            cur = await conn.execute("SELECT current_setting('transaction_read_only')")
            row = await cur.fetchone()
        if row is not None and row[0] == "on":
            raise RepairLogUnavailable("postgres: the server is read-only")

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection; driver errors become :class:`RepairLogUnavailable`."""
        try:
            pool = await self._ensure_pool()
            async with pool.connection() as conn:
                yield conn
        except CONNECTION_ERRORS as exc:
            async with self._lock:
                await self._drop_pool()
            raise RepairLogUnavailable(f"postgres: {exc}") from exc
        except (psycopg.DataError, psycopg.IntegrityError) as exc:  # the data: retrying won't help
            raise RepairLogError(f"postgres: {exc}") from exc
        except psycopg.Error as exc:
            raise RepairLogUnavailable(f"postgres: {exc}") from exc

    async def _ensure_pool(self) -> Pool:
        async with self._lock:
            if self._pool is None:
                timeout = max(2, round(self.timeout))  # libpq's minimum
                conn = await psycopg.AsyncConnection.connect(self.url, connect_timeout=timeout)
                async with conn:
                    await _migrate(conn)
                pool: Pool = AsyncConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self.max_size,
                    kwargs={"autocommit": True, "connect_timeout": timeout},
                    open=False,
                    timeout=self.timeout,
                    check=AsyncConnectionPool.check_connection,
                    name="toolcall-guard-repairlog",
                )
                try:
                    await pool.open(wait=True, timeout=self.timeout)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
            return self._pool

    async def _drop_pool(self) -> None:
        self._stored.clear()  # the database may not be the one it was
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(timeout=self.timeout)
