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
from typing import Any

import orjson
import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

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
from proxy.repairlog.sql import Dialect, get_sql, migrations, page_of, page_sql, stats_sql


def _ts(moment: datetime) -> datetime:
    return moment


DIALECT = Dialect("postgres", "%s", _ts, lambda column: f"{column}::text AS {column[2:]}")
JSON_COLUMNS = frozenset({"rules", "findings", "received", "forwarded", "attempts"})
_VALUES = ", ".join("%s::json" if name in JSON_COLUMNS else "%s" for name in ALL_FIELDS)
INSERT = f"INSERT INTO records ({', '.join(ALL_FIELDS)}) VALUES ({_VALUES}) ON CONFLICT DO NOTHING"
INSERT_RULE = "INSERT INTO record_rules VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
MIGRATION_LOCK = 0x7463_6700  # "tcg": one advisory lock key for the repair-log migrations
CONNECTION_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError, PoolTimeout, PoolClosed)

Pool = AsyncConnectionPool[psycopg.AsyncConnection[Any]]


async def _migrate(conn: psycopg.AsyncConnection[Any]) -> None:
    """Apply the ``schema/postgres_*.sql`` files newer than the recorded version."""
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


def _rows(records: Sequence[Record]) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    rows = [tuple(map(_text, record_row(r, _ts, bytes.decode))) for r in records]
    rules = [row for r in records for row in rule_rows(r, _ts)]
    return rows, rules


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

    async def open(self) -> None:
        async with self._connection():
            pass

    async def close(self) -> None:
        async with self._lock:
            await self._drop_pool()

    async def write(self, records: Sequence[Record]) -> None:
        if not records:
            return
        rows, rules = await asyncio.to_thread(_rows, records)
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.executemany(INSERT, rows)
            await cur.executemany(INSERT_RULE, rules)

    async def get(self, record_id: str) -> dict[str, Any] | None:
        rows = await self._select(get_sql(DIALECT), [record_id])
        return rows[0] if rows else None

    async def query(self, q: RecordQuery) -> tuple[list[dict[str, Any]], str | None]:
        sql, params = page_sql(q, DIALECT)
        return page_of(await self._select(sql, params), q.limit)

    async def stats(self, since: datetime | None) -> dict[str, Any]:
        stats = empty_stats(since)
        queries, params = stats_sql(DIALECT, since)
        async with self._connection() as conn:
            for group, sql in queries:
                cur = await conn.execute(sql.encode(), params)
                stats[group] = {key: count for key, count in await cur.fetchall()}
        stats["total"] = sum(stats["by_outcome"].values())
        return stats

    async def delete(self, before: datetime) -> int:
        async with self._connection() as conn:
            cur = await conn.execute("DELETE FROM records WHERE created_at < %s", [before])
            return cur.rowcount

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
                cur = await conn.execute(
                    "DELETE FROM records WHERE (created_at, id) < (%s, %s)", list(oldest_kept)
                )
                deleted += cur.rowcount
        return deleted

    async def ping(self) -> None:
        async with self._connection() as conn:
            await conn.execute("SELECT 1 FROM records LIMIT 0")
            cur = await conn.execute("SELECT current_setting('transaction_read_only')")
            row = await cur.fetchone()
        if row is not None and row[0] == "on":
            raise RepairLogUnavailable("postgres: the server is read-only")

    async def _select(self, sql: str, params: list[Any]) -> list[dict[str, Any]]:
        async with self._connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.encode(), params)
            return [_loaded(row) for row in await cur.fetchall()]

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
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(timeout=self.timeout)
