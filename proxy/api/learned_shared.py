"""Learned field strips shared by every replica on one PostgreSQL repair log (issue 23 item 4).

Each replica keeps its own :class:`~proxy.api.learned.LearnedStrips` (the hot path reads only
memory) and, every :data:`REFRESH_SECONDS`, syncs it with the table ``learned_strips`` in the
repair log's database: it writes the reports made since the last round (one row per key and
reporter: ``upstream, model, field, reporter``), deletes expired rows, and reads the rest back
into its store. So a refusal learned by one replica is applied by all within a few seconds, and
the confirmation rule (two distinct reporters, :mod:`proxy.api.learned`) counts reporters
across the fleet. ``DELETE /repairs/learned`` empties the table, and every replica forgets an
entry that was shared and is gone from it.

The table is created if missing (it holds expiring state, not records: no migration, and a
repair log of an older version simply gains it). Rows per key stop at the confirmations
needed; a round reads at most :data:`MAX_ROWS` rows. A database that is down costs nothing but
the sharing: each replica goes on with what it learned itself, and says so once in its log.
With SQLite or memory repair logs, learning stays per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import psycopg

from proxy.api.learned import Key, LearnedStrips, Report, Shared
from proxy.errors import LearningUnavailable

LOGGER = logging.getLogger("toolcall_guard")
REFRESH_SECONDS = 1.0
MAX_ROWS = 4096
CREATE_LOCK = 0x7463_6701  # "tcg" + 1: replicas starting together create the table once

CREATE = """
CREATE TABLE IF NOT EXISTS learned_strips (
    upstream TEXT NOT NULL,
    model TEXT NOT NULL,
    field TEXT NOT NULL,
    reporter TEXT NOT NULL,
    evidence TEXT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (upstream, model, field, reporter)
)
"""
# A key takes no more reporters than the confirmations it needs: the table stays bounded by
# what clients can make upstreams refuse.
INSERT = """
INSERT INTO learned_strips (upstream, model, field, reporter, evidence, expires_at)
SELECT %s, %s, %s, %s, %s, %s
WHERE (SELECT count(*) FROM learned_strips WHERE upstream = %s AND model = %s AND field = %s) < %s
ON CONFLICT (upstream, model, field, reporter)
DO UPDATE SET expires_at = GREATEST(learned_strips.expires_at, EXCLUDED.expires_at),
              evidence = EXCLUDED.evidence
"""
EXPIRE = "DELETE FROM learned_strips WHERE expires_at <= %s"
SELECT = (
    "SELECT upstream, model, field, reporter, evidence, expires_at FROM learned_strips"
    " WHERE expires_at > %s ORDER BY expires_at DESC LIMIT %s"
)
CLEAR = "DELETE FROM learned_strips"


class SharedLearned:
    """Syncs one store with the table; :meth:`start` runs the rounds, :meth:`stop` ends them."""

    def __init__(self, url: str, store: LearnedStrips, interval: float = REFRESH_SECONDS):
        self.url = url
        self.store = store
        self.interval = interval
        self.rounds = 0  # completed syncs (tests wait on it)
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._failing = False

    def start(self) -> None:
        self.store.sharing = True
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    async def clear(self) -> None:
        """Empty the table (``DELETE /repairs/learned``); every replica forgets on its round."""
        try:
            conn = await self._connection()
            await conn.execute(CLEAR)
        except psycopg.Error as exc:
            await self._drop()
            raise LearningUnavailable(f"The shared learned strips are unreachable: {exc}") from exc

    async def sync(self) -> None:
        """One round: write this replica's reports, drop expired rows, read the table back."""
        reports = self.store.drain()
        try:
            conn = await self._connection()
            now = self.store.clock()
            async with conn.transaction():
                for report in reports:
                    await conn.execute(INSERT, _insert_args(report, self.store.confirmations))
                await conn.execute(EXPIRE, (now,))
            cursor = await conn.execute(SELECT, (now, MAX_ROWS))
            rows = await cursor.fetchall()
        except psycopg.Error:
            await self._drop()
            raise
        self.store.absorb(_table(rows))
        self.rounds += 1

    async def _run(self) -> None:
        while True:
            try:
                await self.sync()
                if self._failing:
                    LOGGER.warning("learned strips: shared table reachable again")
                self._failing = False
            except psycopg.Error as exc:
                if not self._failing:
                    LOGGER.warning("learned strips: shared table unavailable: %s", exc)
                self._failing = True
            await asyncio.sleep(self.interval)

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=3
            )
            async with self._conn.transaction():
                await self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (CREATE_LOCK,))
                await self._conn.execute(CREATE)
        return self._conn

    async def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                await self._conn.close()
            self._conn = None


def _insert_args(report: Report, confirmations: int) -> tuple[Any, ...]:
    (upstream, model, field), reporter, evidence, expires_at = report
    return (upstream, model, field, reporter, evidence, expires_at, upstream, model, field,
            confirmations)  # fmt: skip


def _table(rows: list[tuple[Any, ...]]) -> dict[Key, Shared]:
    table: dict[Key, Shared] = {}
    for upstream, model, field, reporter, evidence, expires_at in rows:
        key = (upstream, model, field)
        reporters, _, latest = table.get(key, (set(), evidence, expires_at))
        reporters.add(reporter)
        table[key] = (reporters, evidence, max(latest, expires_at))
    return table
