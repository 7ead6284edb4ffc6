"""The batch writer: batching, drops, failing backends that come back (their records kept
for them), draining, retention."""

from __future__ import annotations

import asyncio
import gc
import shutil
import socket
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from proxy.repairlog import (
    MemoryRepairLog,
    Record,
    RecordQuery,
    RecordWriter,
    RepairLog,
    RepairLogUnavailable,
    SQLiteRepairLog,
)
from proxy.repairlog.capture import Digests
from proxy.repairlog.postgres import PostgresRepairLog
from proxy.repairlog.record import utcnow
from proxy.settings import RepairLogSettings
from tests.repairlog.records import make_record

pytestmark = pytest.mark.anyio


def settings(**overrides: Any) -> RepairLogSettings:
    values: dict[str, Any] = {"batch_size": 50, "flush_interval": 0.05, "queue_size": 1000}
    return RepairLogSettings(**{**values, **overrides})


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def eventually(condition: Callable[[], bool], within: float = 5.0) -> None:
    """Wait until ``condition()`` holds, failing after ``within`` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"not true within {within} s"
        await asyncio.sleep(0.01)


async def count(log: RepairLog) -> int:
    return int((await log.stats(None))["total"])


@pytest.fixture
async def memory_log() -> AsyncIterator[MemoryRepairLog]:
    log = MemoryRepairLog()
    await log.open()
    yield log
    await log.close()


async def test_a_full_batch_is_written_without_waiting_for_the_interval(
    memory_log: MemoryRepairLog,
) -> None:
    writer = RecordWriter(memory_log, settings(batch_size=3, flush_interval=60))
    writer.start()
    try:
        assert all(writer.submit(make_record(n)) for n in range(3))
        await eventually(lambda: writer.health.written == 3)
        assert await count(memory_log) == 3
        await eventually(lambda: writer.pending == 0)
    finally:
        await writer.stop()


async def test_a_lone_record_is_written_within_the_flush_interval(
    memory_log: MemoryRepairLog,
) -> None:
    writer = RecordWriter(memory_log, settings(batch_size=100, flush_interval=0.05))
    writer.start()
    written_before = metric("toolcall_guard_repairlog_written_total")
    try:
        record = make_record()
        assert writer.submit(record)
        await eventually(lambda: writer.health.written == 1, within=2)
        assert await memory_log.get(record.id) is not None
        assert metric("toolcall_guard_repairlog_written_total") == written_before + 1
    finally:
        await writer.stop()


async def test_a_full_queue_drops_and_counts(memory_log: MemoryRepairLog) -> None:
    writer = RecordWriter(memory_log, settings(queue_size=3))
    before = metric("toolcall_guard_repairlog_dropped_total", reason="queue_full")
    accepted = [writer.submit(make_record(n)) for n in range(5)]  # nothing runs in between
    assert accepted == [True, True, True, False, False]
    assert writer.health.dropped == 2
    assert writer.pending == 3  # queued: the writer is not started
    assert metric("toolcall_guard_repairlog_dropped_total", reason="queue_full") == before + 2
    assert metric("toolcall_guard_repairlog_queue_depth") == 3
    writer.start()
    await writer.stop()
    assert await count(memory_log) == 3
    assert metric("toolcall_guard_repairlog_queue_depth") == 0


async def test_the_queue_is_bounded_by_the_bytes_its_records_hold(
    memory_log: MemoryRepairLog,
) -> None:
    """Records of large histories are held until written: a byte bound keeps a slow backend
    from turning a burst of them into gigabytes."""
    writer = RecordWriter(memory_log, settings(queue_size=1000, queue_bytes=10_000))
    before = metric("toolcall_guard_repairlog_dropped_total", reason="queue_full")
    sizes = [4_000, 4_000, 4_000, 1_000, 50_000]
    accepted = [writer.submit(make_record(n, size=size)) for n, size in enumerate(sizes)]
    assert accepted == [True, True, False, True, False]
    assert metric("toolcall_guard_repairlog_dropped_total", reason="queue_full") == before + 2
    writer.start()
    await eventually(lambda: writer.health.written == 3, within=2)
    # Written records free their bytes: one larger than the whole bound still gets in alone.
    assert writer.submit(make_record(9, size=50_000))
    await eventually(lambda: writer.health.written == 4, within=2)
    await writer.stop()
    assert await count(memory_log) == 4


class Body(dict[str, Any]):
    """A request body a weak reference can follow (a plain dict cannot)."""


async def test_a_written_batch_is_let_go_while_the_writer_waits(
    memory_log: MemoryRepairLog,
) -> None:
    """Once written, a batch's bodies are not held until the next batch comes: they would sit
    outside ``queue_bytes``, which bounds only the records not yet written."""
    writer = RecordWriter(memory_log, settings(batch_size=2, flush_interval=60))
    writer.start()
    try:
        records = [make_record(n) for n in range(2)]
        for record in records:
            record.received = Body(record.received)
        bodies = [weakref.ref(record.received) for record in records]
        assert all(writer.submit(record) for record in records)
        del records, record
        await eventually(lambda: writer.health.written == 2 and writer.pending == 0)
        gc.collect()  # what still reaches them is a reference, not a cycle awaiting collection
        assert [body() for body in bodies] == [None, None]
    finally:
        await writer.stop()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_stop_drains_the_queue(kind: str, tmp_path: Path) -> None:
    log: RepairLog = MemoryRepairLog() if kind == "memory" else SQLiteRepairLog(tmp_path / "x.db")
    await log.open()
    writer = RecordWriter(log, settings(batch_size=7, flush_interval=60))
    writer.start()
    for n in range(50):
        writer.submit(make_record(n))
    await writer.stop()
    assert writer.health.written == 50
    assert await count(log) == 50
    assert not writer.submit(make_record(99))  # stopped: refused and counted
    assert writer.health.dropped == 1
    await log.close()


class StuckLog(MemoryRepairLog):
    """A backend whose writes never finish (a hung server)."""

    async def write(self, records: Sequence[Record]) -> None:
        await asyncio.Event().wait()


async def test_stop_gives_up_after_its_timeout_and_counts_what_is_lost() -> None:
    log = StuckLog()
    await log.open()
    writer = RecordWriter(log, settings(batch_size=2), stop_timeout=0.2)
    writer.start()
    for n in range(5):
        writer.submit(make_record(n))
    before = metric("toolcall_guard_repairlog_dropped_total", reason="shutdown")
    async with asyncio.timeout(3):
        await writer.stop()
    assert writer.health.written == 0
    assert writer.health.dropped == 5
    assert metric("toolcall_guard_repairlog_dropped_total", reason="shutdown") == before + 5


async def test_sqlite_directory_removed_then_restored(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    log = SQLiteRepairLog(folder / "repairs.sqlite3")
    await log.open()
    writer = RecordWriter(log, settings(batch_size=1, flush_interval=0.02))
    writer.start()
    try:
        assert writer.submit(make_record(0))
        await eventually(lambda: writer.health.written == 1)

        shutil.rmtree(folder)
        errors = metric("toolcall_guard_repairlog_errors_total")
        waiting = make_record(1)
        assert writer.submit(waiting)  # never raises into the request path
        await eventually(lambda: not writer.healthy)
        assert writer.stalled
        assert writer.pending == 1  # kept for the next try, not dropped
        assert writer.health.dropped == 0
        assert "sqlite" in (writer.last_error or "")
        assert metric("toolcall_guard_repairlog_errors_total") > errors
        with pytest.raises(RepairLogUnavailable):
            await log.ping()

        folder.mkdir()
        later = make_record(2)
        assert writer.submit(later)
        await eventually(lambda: writer.health.written == 3)
        assert writer.healthy
        assert not writer.stalled
        assert await log.get(waiting.id) is not None
        assert await log.get(later.id) is not None
        await log.ping()
    finally:
        await writer.stop()
        await log.close()


async def test_capture_mode_is_applied_by_the_writer(memory_log: MemoryRepairLog) -> None:
    writer = RecordWriter(memory_log, settings(capture="redacted", max_error_body_bytes=256))
    writer.start()
    record = make_record(outcome="upstream_rejected")
    record.received["api_key"] = "sk-secret"
    record.upstream_error = "é" * 1000
    writer.submit(record)
    await writer.stop()
    got = await memory_log.get(record.id)
    assert got is not None
    content = got["received"]["messages"][0]["content"]
    assert set(content) == {"length", "hmac_sha256"}
    assert content["hmac_sha256"] == Digests(await memory_log.capture_key()).hex("question 0")
    assert "api_key" not in got["received"]
    assert len(got["upstream_error"].encode()) <= 256
    assert record.received["messages"][0]["content"] == "question 0"  # the caller's copy intact


async def test_retention_runs_at_start(memory_log: MemoryRepairLog) -> None:
    now = utcnow()
    old = [make_record(n, at=now - timedelta(days=40)) for n in range(3)]
    fresh = [make_record(n, at=now - timedelta(minutes=n)) for n in range(5)]
    await memory_log.write(old + fresh)
    writer = RecordWriter(memory_log, settings(retention_days=30, max_records=4))
    writer.start()
    try:
        await eventually(lambda: len(memory_log._records) == 4)
        page, _ = await memory_log.query(RecordQuery())
        assert [row["id"] for row in page] == [r.id for r in fresh[:4]]
    finally:
        await writer.stop()


async def test_retention_repeats_on_its_interval(memory_log: MemoryRepairLog) -> None:
    writer = RecordWriter(memory_log, settings(max_records=2), retention_interval=0.02)
    writer.start()
    try:
        now = utcnow()
        # Written after the first pass at start: only a later pass can prune them.
        await memory_log.write([make_record(n, at=now - timedelta(seconds=n)) for n in range(5)])
        await eventually(lambda: len(memory_log._records) == 2)
    finally:
        await writer.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def tcp_forwarder(port: int, target: int) -> AsyncIterator[None]:
    """127.0.0.1:``port`` relayed to 127.0.0.1:``target`` (PostgreSQL coming back)."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    open_writers: list[asyncio.StreamWriter] = []
    done: list[asyncio.Future[Any]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        open_writers.extend([writer, up_writer])
        relay = asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        done.append(relay)
        await relay

    server = await asyncio.start_server(serve, "127.0.0.1", port)
    try:
        yield
    finally:
        server.close()
        for writer in open_writers:
            writer.close()  # the pipes then read EOF and end
        async with asyncio.timeout(5):
            await asyncio.gather(*done, return_exceptions=True)
            await server.wait_closed()


@pytest.mark.postgres
async def test_postgres_unreachable_then_back(pg_url: str) -> None:
    port = free_port()  # nothing listens there yet
    url = pg_url.replace("127.0.0.1:5432", f"127.0.0.1:{port}")
    log = PostgresRepairLog(url, timeout=1.0)
    with pytest.raises(RepairLogUnavailable):
        await log.open()
    writer = RecordWriter(log, settings(batch_size=1, flush_interval=0.02))
    writer.start()
    try:
        waiting = make_record(0)
        assert writer.submit(waiting)
        await eventually(lambda: not writer.healthy)
        assert writer.pending == 1  # kept for the next try, not dropped
        assert "postgres" in (writer.last_error or "")

        async with tcp_forwarder(port, 5432):
            later = make_record(1)
            assert writer.submit(later)
            await eventually(lambda: writer.health.written == 2, within=10)
            assert writer.healthy
            await log.ping()
            await writer.stop()
            await log.close()
    finally:
        await writer.stop()
        await log.close()
    direct = PostgresRepairLog(pg_url)
    await direct.open()
    try:
        assert await direct.get(waiting.id) is not None
        assert await direct.get(later.id) is not None
    finally:
        await direct.close()
