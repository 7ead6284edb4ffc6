"""PostgreSQL connections: a ``psycopg_pool`` pool made on first use (after the schema
migrations ran on a connection of their own) and dropped when the server goes away, so the next
call connects afresh; a direct connection first, so an unreachable server fails fast instead of
waiting out the pool's retry loop. Several replicas may share one database: the migrations run
under an advisory lock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from proxy.errors import RepairLogError, RepairLogUnavailable
from proxy.repairlog.tables import migrations

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


class Connections:
    """The pool of a PostgreSQL repair log at ``url``: ``timeout`` bounds connecting and waiting
    for a pooled connection, in seconds; ``dropped`` runs when the pool is dropped (the
    database may not be the one it was)."""

    def __init__(
        self, url: str, timeout: float, max_size: int, dropped: Callable[[], None]
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.max_size = max_size
        self._dropped = dropped
        self._pool: Pool | None = None
        self._lock = asyncio.Lock()

    async def close(self) -> None:
        async with self._lock:
            await self._drop_pool()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
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
        self._dropped()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close(timeout=self.timeout)
