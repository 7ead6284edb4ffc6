"""The repair log fails under the proxy; proxied traffic does not notice, no record goes unseen.

Every repaired request's record is in the log, or waiting in the writer's queue (written when
the backend is back), or counted as dropped (the queue was full). ``/readyz`` says 503 while
records cannot be written.

How the storage is broken here, as root in a container, without privileges the suite could not
count on (chmod does not stop root; mounting a read-only or tiny tmpfs and ``chattr +i`` need
capabilities a CI runner does not grant):

- unwritable: the log's directory is a regular file (``ENOTDIR``, whatever the user), or a path
  under ``/proc`` (nobody creates files there);
- disk full: the proxy runs in a subprocess with ``RLIMIT_FSIZE`` (and ``SIGXFSZ`` ignored),
  so SQLite's writes fail with ``EFBIG``; the test then lifts the limit (``prlimit``);
- PostgreSQL down and killed: a TCP relay in front of 127.0.0.1:5432 that the test stops (the
  listener closes, every relayed connection is cut) and starts again.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from proxy.repairlog import MemoryRepairLog, Record, RecordWriter, RepairLogError
from proxy.repairlog.postgres import PostgresRepairLog
from proxy.settings import RepairLogSettings
from tests.hardening.conftest import ORPHAN, Guard, TcpRelay, eventually, via
from tests.repairlog.records import make_record

FAST = 0.5  # seconds: every proxied request answers within this, log or no log


def repaired(
    http: httpx.Client, base: str, count: int, model: str = "gpt-4o", **headers: str
) -> list[str]:
    """Send ``count`` repairable requests; each must succeed fast. Their record ids."""
    ids = []
    for _ in range(count):
        started = time.perf_counter()
        response = http.post(
            base + "/v1/chat/completions",
            content=orjson.dumps({"model": model, "messages": ORPHAN}),
            headers=headers,
        )
        assert time.perf_counter() - started < FAST
        assert response.status_code == 200, response.text
        assert response.headers["x-toolcall-guard-outcome"] == "repaired"
        ids.append(response.headers["x-toolcall-guard-record"])
    return ids


def readiness(http: httpx.Client, base: str) -> tuple[int, str]:
    response = http.get(base + "/readyz")
    return response.status_code, response.json().get("reason", "")


def settings_for(url: str, **extra: Any) -> dict[str, Any]:
    return {"url": url, "flush_interval": 0.05, "batch_size": 5, **extra}


# --- SQLite --------------------------------------------------------------------------------


def test_sqlite_unwritable_at_start_then_writable(
    tmp_path: Path, start_guard: Callable[..., Guard], emulator: str, http: httpx.Client
) -> None:
    blocker = tmp_path / "logs"
    blocker.write_text("a file where the log's directory should be\n")
    guard = start_guard(
        {"openai": emulator}, repair_log_settings=settings_for(f"sqlite:///{blocker}/r.sqlite3")
    )
    status, reason = readiness(http, guard.url)
    assert status == 503
    assert "sqlite" in reason

    ids = repaired(http, guard.url, 12)
    writer = guard.app.state.writer
    eventually(lambda: not writer.healthy, what="the writer tried and failed")
    assert (writer.pending, writer.health.dropped, writer.health.written) == (12, 0, 0)
    status, reason = readiness(http, guard.url)
    assert status == 503

    blocker.unlink()
    blocker.mkdir()  # the storage is back
    eventually(lambda: writer.health.written == 12, within=10, what="the queued records written")
    assert readiness(http, guard.url)[0] == 200
    for record_id in ids:
        assert http.get(f"{guard.url}/repairs/{record_id}").status_code == 200
    assert writer.health.dropped == 0


def test_sqlite_never_writable_drops_and_counts_beyond_the_queue(
    start_guard: Callable[..., Guard], emulator: str, http: httpx.Client
) -> None:
    url = "sqlite:////proc/toolcall-guard-tests/repairs.sqlite3"
    guard = start_guard({"openai": emulator}, repair_log_settings=settings_for(url, queue_size=8))
    repaired(http, guard.url, 20)
    writer = guard.app.state.writer
    eventually(lambda: not writer.healthy, what="the writer tried and failed")
    assert writer.health.written == 0
    assert writer.pending == 8  # the queue holds what it can...
    assert writer.health.dropped == 12  # ...and counts the rest: 8 + 12 = every repaired request
    status, reason = readiness(http, guard.url)
    assert status == 503
    assert "/proc" in reason or "unable to open" in reason


def test_a_locked_sqlite_database_makes_the_proxy_unready_at_once_and_loses_nothing(
    tmp_path: Path, start_guard: Callable[..., Guard], emulator: str, http: httpx.Client
) -> None:
    """Another process holds the write lock: ``/readyz`` says so within a moment (its ping has
    its own connection and gives up on the lock quickly, issue 26 item 3), requests are served
    as fast as ever, and their records are written once the lock is gone."""
    path = tmp_path / "r.sqlite3"
    guard = start_guard({"openai": emulator}, repair_log_settings=settings_for(f"sqlite:///{path}"))
    assert readiness(http, guard.url)[0] == 200
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        for _ in range(3):
            started = time.perf_counter()
            status, reason = readiness(http, guard.url)
            assert (status, time.perf_counter() - started < 1.0) == (503, True)
            assert "locked" in reason
        ids = repaired(http, guard.url, 3)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    writer = guard.app.state.writer
    eventually(
        lambda: writer.health.written == 3, within=15, what="the records written after the lock"
    )
    eventually(lambda: readiness(http, guard.url)[0] == 200, what="ready again")
    for record_id in ids:
        assert http.get(f"{guard.url}/repairs/{record_id}").status_code == 200


def test_records_waiting_for_storage_are_bounded_by_their_bytes(
    start_guard: Callable[..., Guard], emulator: str, http: httpx.Client
) -> None:
    url = "sqlite:////proc/toolcall-guard-tests/repairs.sqlite3"
    bound = settings_for(url, queue_size=1000, queue_bytes=1024)
    guard = start_guard({"openai": emulator}, repair_log_settings=bound)
    repaired(http, guard.url, 20)  # every request still answered, fast
    writer = guard.app.state.writer
    received = len(orjson.dumps({"model": "gpt-4o", "messages": ORPHAN}))
    assert 1 <= writer.pending <= 1024 // received  # each holds its received + forwarded body
    assert writer.pending + writer.health.dropped == 20


class Subprocess:
    """``toolcall-guard serve`` in a child process, stderr drained into :attr:`output`."""

    def __init__(self, command: list[str]) -> None:
        self.output = b""
        self.process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
        assert self.process.stderr is not None
        self._drain = threading.Thread(target=self._read, args=(self.process.stderr,), daemon=True)
        self._drain.start()

    def _read(self, stream: Any) -> None:
        while data := stream.read1(65536):
            self.output += data

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._drain.join(5)
        if self.process.stderr is not None:
            self.process.stderr.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def metric(http: httpx.Client, base: str, name: str) -> float:
    """The sum of a metric's samples (all labels) at ``/metrics``."""
    text = http.get(base + "/metrics").text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


@pytest.fixture
def limited_proxy(tmp_path: Path, emulator: str) -> Iterator[tuple[Subprocess, str, Path]]:
    """The proxy in a child process that may write files of at most 192 KiB."""
    database = tmp_path / "repairs.sqlite3"
    config = tmp_path / "proxy.toml"
    config.write_text(
        f"""
[server]
log_level = "warning"
[repair_log]
url = "sqlite:///{database}"
flush_interval = 0.05
batch_size = 2
[upstreams.openai]
base_url = "{emulator}"
"""
    )
    port = free_port()
    limit = 192 * 1024
    launcher = (
        "import os, resource, signal, sys; "
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "  # EFBIG instead of a killed process
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY)); "
        "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    )
    command = [sys.executable, "-c", launcher, "-m", "proxy", "serve"]
    command += ["--config", str(config), "--port", str(port)]
    child = Subprocess(command)
    base = f"http://127.0.0.1:{port}"
    try:
        eventually(lambda: _answers(base), within=15, what="the child proxy listening")
        yield child, base, database
    finally:
        child.stop()


def _answers(base: str) -> bool:
    try:
        return httpx.get(base + "/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_sqlite_disk_full_then_space_again(
    limited_proxy: tuple[Subprocess, str, Path], http: httpx.Client
) -> None:
    child, base, database = limited_proxy
    big = "x" * 8_000  # each record stores it twice (received and forwarded)
    body = orjson.dumps(
        {"model": "gpt-4o", "messages": [*ORPHAN, {"role": "user", "content": big}]}
    )
    sent = 0
    # The limit is per file: SQLite gets some room back each time it folds its WAL file into
    # the database file, until the database file itself reaches the limit.
    while (status := readiness(http, base))[0] == 200:
        started = time.perf_counter()
        response = http.post(base + "/v1/chat/completions", content=body)
        assert time.perf_counter() - started < FAST
        assert response.status_code == 200
        sent += 1
        assert sent < 300, "the file size limit never bit:\n" + child.output.decode()
        time.sleep(0.02)
    assert "full" in status[1] or "I/O" in status[1], status
    written = metric(http, base, "toolcall_guard_repairlog_written_total")
    waiting = metric(http, base, "toolcall_guard_repairlog_queue_depth")
    assert metric(http, base, "toolcall_guard_repairlog_dropped_total") == 0
    assert written + waiting == sent
    assert waiting > 0

    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    resource.prlimit(child.process.pid, resource.RLIMIT_FSIZE, unlimited)
    eventually(
        lambda: metric(http, base, "toolcall_guard_repairlog_written_total") == sent,
        within=10,
        what="the waiting records written once there is space",
    )
    assert readiness(http, base)[0] == 200
    child.stop()
    assert sqlite_count(database) == sent


def sqlite_count(path: Path) -> int:
    """The number of records in a SQLite log file, read directly (a conversation's repeated
    turns are kept in ``turns``)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        sql = "SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM turns)"
        return int(conn.execute(sql).fetchone()[0])


# --- PostgreSQL ----------------------------------------------------------------------------


def pg_ids(url: str) -> dict[str, str | None]:
    """Record id -> model, read straight from the schema the URL names."""
    with psycopg.connect(url) as conn:
        sql = "SELECT id, model FROM records UNION ALL SELECT id, model FROM turns"
        return dict(conn.execute(sql).fetchall())


@pytest.mark.postgres
def test_postgres_down_at_start(
    pg_url: str,
    pg_relay: TcpRelay,
    start_guard: Callable[..., Guard],
    emulator: str,
    http: httpx.Client,
) -> None:
    guard = start_guard(
        {"openai": emulator}, repair_log_settings=settings_for(via(pg_relay, pg_url))
    )  # started, and serving, with nothing listening where the log should be
    status, reason = readiness(http, guard.url)
    assert status == 503
    assert "postgres" in reason
    ids = repaired(http, guard.url, 10)
    ids += repaired(http, guard.url, 1, model="gpt-4o\x00nul")  # text PostgreSQL cannot hold
    writer = guard.app.state.writer
    eventually(lambda: not writer.healthy, what="the writer tried and failed")
    assert writer.pending == 11

    pg_relay.start()
    eventually(lambda: writer.health.written == 11, within=10, what="the queued records written")
    assert readiness(http, guard.url)[0] == 200
    stored = pg_ids(pg_url)  # migrated by the writer on its first successful batch
    assert set(stored) == set(ids)
    assert stored[ids[-1]] == "gpt-4o\ufffdnul"
    assert writer.health.dropped == 0


@pytest.mark.postgres
def test_postgres_killed_mid_run_then_restarted(
    pg_url: str,
    pg_relay: TcpRelay,
    start_guard: Callable[..., Guard],
    emulator: str,
    http: httpx.Client,
) -> None:
    pg_relay.start()
    url = via(pg_relay, pg_url)
    log = PostgresRepairLog(url, timeout=1.0)  # waits 1 s (not 5) for a pooled connection
    guard = start_guard({"openai": emulator}, repair_log=log, repair_log_settings=settings_for(url))
    writer = guard.app.state.writer
    ids = repaired(http, guard.url, 10)
    eventually(lambda: writer.health.written == 10, what="records written while the server is up")
    assert readiness(http, guard.url)[0] == 200

    pg_relay.stop()  # killed: the listener and every pooled connection gone
    ids += repaired(http, guard.url, 20)
    eventually(lambda: writer.stalled, what="the writer noticed")
    started = time.perf_counter()
    assert readiness(http, guard.url)[0] == 503
    assert time.perf_counter() - started < 2.5  # a probe's answer, not a hang
    ids += repaired(http, guard.url, 10)

    pg_relay.start()
    eventually(lambda: writer.health.written == 40, within=10, what="the waiting records written")
    assert readiness(http, guard.url)[0] == 200
    assert set(pg_ids(pg_url)) == set(ids)
    assert writer.health.dropped == 0


@pytest.mark.postgres
def test_postgres_down_with_a_full_queue_drops_and_counts(
    pg_url: str,
    pg_relay: TcpRelay,
    start_guard: Callable[..., Guard],
    emulator: str,
    http: httpx.Client,
) -> None:
    guard = start_guard(
        {"openai": emulator},
        repair_log_settings=settings_for(via(pg_relay, pg_url), queue_size=10),
    )
    ids = repaired(http, guard.url, 25)
    writer = guard.app.state.writer
    assert writer.health.dropped == 15
    pg_relay.start()
    eventually(lambda: writer.health.written == 10, within=10, what="the queued records written")
    stored = pg_ids(pg_url)
    assert len(stored) + writer.health.dropped == len(ids)  # every record: in the log or counted
    assert set(stored) == set(ids[:10])  # the first ten waited; the rest found the queue full


# --- a record the backend refuses ----------------------------------------------------------


class Picky(MemoryRepairLog):
    """Refuses, for what it holds, any batch with a record of model "poison"."""

    async def write(self, records: Any) -> None:
        if any(record.model == "poison" for record in records):
            raise RepairLogError("value out of range")
        await super().write(records)


def test_a_refused_record_is_dropped_alone() -> None:
    async def scenario() -> tuple[RecordWriter, Picky, list[Record]]:
        log = Picky()
        await log.open()
        writer = RecordWriter(log, RepairLogSettings(batch_size=5, flush_interval=0.02))
        writer.start()
        records = [make_record(n, model="poison" if n == 2 else "gpt-4o") for n in range(5)]
        for record in records:
            writer.submit(record)
        await writer.stop()
        return writer, log, records

    writer, log, records = asyncio.run(scenario())
    assert (writer.health.written, writer.health.dropped) == (4, 1)
    assert writer.healthy
    kept = {record_id for record_id in log._records}
    assert kept == {r.id for r in records if r.model != "poison"}
