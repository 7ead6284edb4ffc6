"""PostgreSQL backend: psycopg 3 async with a ``psycopg_pool`` pool (``toolcall-guard[postgres]``).

Several proxy replicas may share one database: inserts ignore ids already present, migrations
run under an advisory lock. The pool, and what happens when the server goes away, is
:mod:`.postgres_conn`'s.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

import orjson
import psycopg
from psycopg.rows import dict_row

from proxy.errors import RepairLogUnavailable
from proxy.repairlog import payloads
from proxy.repairlog.base import RecordQuery, iso
from proxy.repairlog.batch import Batch, Memory
from proxy.repairlog.postgres_conn import Connections
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


async def _blobs(conn: psycopg.AsyncConnection[Any], digests: set[bytes]) -> dict[bytes, bytes]:
    cur = await conn.execute(SELECT_BLOBS, [list(digests)])
    found = await cur.fetchall()
    return {bytes(digest): payloads.read_blob(bytes(body)) for digest, body in found}


class PostgresRepairLog:
    """A repair log in PostgreSQL; ``url`` is a libpq URL (``postgresql://`` or ``postgres://``).

    ``timeout`` bounds connecting and waiting for a pooled connection, in seconds.
    """

    def __init__(self, url: str, *, timeout: float = 5.0, max_size: int = 4) -> None:
        self.url = url
        self._memory = Memory()  # one batch at a time
        self._db = Connections(url, timeout, max_size, dropped=self._memory.forget_stored)

    async def open(self) -> None:
        async with self._db.connection():
            pass

    async def close(self) -> None:
        await self._db.close()

    async def write(self, records: Sequence[Record]) -> None:
        if not records:
            return
        batch = Batch(records, self._memory)
        async with self._db.connection() as conn, conn.transaction(), conn.cursor() as cur:
            known = {}
            for key in batch.lookups():
                await cur.execute(DIALECT.first().encode(), list(key))
                row = await cur.fetchone()
                if row is not None:
                    known[key] = row[0]
            # Off the event loop: packing hashes items.
            rows = partial(batch.rows, known, _ts, bytes.decode, _text)
            firsts, turns, rules = await asyncio.to_thread(rows)
            await cur.executemany(INSERT, firsts)
            await cur.executemany(INSERT_TURN, turns)
            await cur.executemany(INSERT_RULE, rules)
            await cur.execute(LAST_USED, [batch.unsure()])
            stored = {bytes(d): used for d, used in await cur.fetchall()}
            writes = await asyncio.to_thread(batch.payloads, stored)
            await cur.executemany(INSERT_PAYLOAD, writes.rows)
            if writes.stale:
                await cur.execute(TOUCH, [batch.latest, writes.stale])
            await cur.executemany(DIALECT.bump().encode(), batch.bumps(_ts))
        batch.committed()

    async def get(self, record_id: str) -> dict[str, Any] | None:
        async with self._db.connection() as conn, conn.transaction():
            # One snapshot: retention cannot take a payload between the reads.
            await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            async with conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(DIALECT.record().encode(), [record_id])
                found = await cur.fetchone()
                if found is None:
                    await cur.execute(DIALECT.record("turns").encode(), [record_id])
                    found = await cur.fetchone()
            if found is None:
                return None
            row = _loaded(found)
            if row.pop("packed"):
                bodies = payloads.skeletons(row)
                blobs = await _blobs(conn, payloads.chunk_refs(bodies))
                blobs.update(await _blobs(conn, payloads.leaf_refs(bodies, blobs)))
                payloads.unpack_record(row, blobs)
            return row

    async def query(self, q: RecordQuery) -> tuple[list[dict[str, Any]], str | None]:
        sql, params = DIALECT.page(q)
        async with self._db.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(sql.encode(), params)
            rows = [_loaded(row) for row in await cur.fetchall()]
            refs = payloads.findings_refs(rows)
            if refs:
                payloads.unpack_findings(rows, await _blobs(conn, refs))
        return page_of(rows, q.limit)

    async def capture_key(self) -> bytes:
        async with self._db.connection() as conn, conn.transaction():
            await conn.execute(SECRET_INSERT.format(ph="%s"), ["capture", os.urandom(32)])
            cur = await conn.execute(SECRET_SELECT.format(ph="%s"), ["capture"])
            row = await cur.fetchone()
        assert row is not None  # inserted above, or by another process before
        return bytes(row[0])

    async def stats(self, since: datetime | None, owner: str | None = None) -> dict[str, Any]:
        queries, params = DIALECT.stats(since, owner)
        counts = {}
        async with self._db.connection() as conn:
            for group, sql in queries:
                counts[group] = await (await conn.execute(sql.encode(), params)).fetchall()
        return stats_from(since, counts)

    async def delete(self, before: datetime) -> int:
        async with self._db.connection() as conn, conn.transaction():
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
        async with self._db.connection() as conn:
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
        self._memory.forget_stored()
        cur = await conn.execute(OLDEST.encode())
        row = await cur.fetchone()
        kept = kept_since(None if row is None else row[0])
        await conn.execute(DIALECT.collect().encode(), [kept])

    async def ping(self) -> None:
        """On a pooled connection beside the writer's; a table someone keeps locked is reported
        (lock timeout) within a quarter second, not waited on."""
        async with self._db.connection() as conn, conn.transaction():
            await conn.execute("SET LOCAL lock_timeout = '250ms'")
            await conn.execute("SELECT 1 FROM records LIMIT 0")
            cur = await conn.execute("SELECT current_setting('transaction_read_only')")
            row = await cur.fetchone()
        if row is not None and row[0] == "on":
            raise RepairLogUnavailable("postgres: the server is read-only")
