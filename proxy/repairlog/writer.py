"""The batch writer: a bounded queue between the request path and the repair log.

``submit`` only appends to a deque (never blocks, never raises, does no work on the caller's
path); a background task applies the capture mode off the event loop, and writes a batch when
``batch_size`` records are waiting or the first waited ``flush_interval`` seconds. A second
task applies retention (:mod:`proxy.repairlog.retention`).

No record is lost without being counted (``toolcall_guard_repairlog_dropped_total`` by reason):
a backend that is unavailable gets the batch back at the head of the queue, tried again after a
growing pause (up to :data:`MAX_BACKOFF`); beyond ``queue_size`` records or ``queue_bytes`` of
bodies (:attr:`Record.size`) new records are dropped (``queue_full``), never the request; a
record the backend refuses for what it holds is found by writing its batch one by one and
dropped alone (``invalid``); ``stop`` drains within ``stop_timeout`` and counts the rest
(``shutdown``, ``backend``). Records are readable before they are written (:meth:`find`: the
queue, the batch being written, announcements; see :mod:`proxy.repairlog.unwritten`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from proxy import metrics
from proxy.errors import RepairLogError, RepairLogUnavailable
from proxy.repairlog.base import RepairLog
from proxy.repairlog.capture import Digests, capture_batch
from proxy.repairlog.credentials import Checked
from proxy.repairlog.health import Health
from proxy.repairlog.record import Record
from proxy.repairlog.retention import retain
from proxy.repairlog.unwritten import Unwritten
from proxy.settings import RepairLogSettings

LOGGER = logging.getLogger("toolcall_guard.repairlog")

#: The longest pause between two tries of a backend that keeps failing, in seconds.
MAX_BACKOFF = 5.0


class RecordWriter:
    """Feeds ``log`` from a bounded queue; see the module docstring. Use from one event loop."""

    def __init__(
        self,
        log: RepairLog,
        settings: RepairLogSettings,
        *,
        retention_interval: float = 300.0,
        stop_timeout: float = 10.0,
        write_timeout: float = 30.0,
    ) -> None:
        self._log = log
        self._write_timeout = write_timeout
        self._settings = settings
        self._retention_interval = retention_interval
        self._stop_timeout = stop_timeout
        self._queue: deque[Record] = deque()
        self._unwritten = Unwritten(settings.queue_size)
        self._wake = asyncio.Event()  # something was queued, or stop was asked
        self._full = asyncio.Event()  # a whole batch is waiting, or stop was asked
        self._stop = asyncio.Event()  # stop was asked (ends a pause between failed tries)
        self._task: asyncio.Task[None] | None = None
        self._retention: asyncio.Task[None] | None = None
        self._stopping = False
        self._in_flight = 0  # records of the batch being written
        self._bytes = 0  # Record.size of the pending records
        self.health = Health()
        #: The log's keyed digests (``capture`` redacted or none), read from it once.
        self._digests: Digests | None = None
        #: Each conversation's last body, for the capture step (one batch at a time uses it).
        self._checked = Checked()

    @property
    def pending(self) -> int:
        """Records not yet written: queued, or in the batch being written."""
        return len(self._queue) + self._in_flight

    @property
    def healthy(self) -> bool:
        """False from a failed write until the next successful one (or when the task died)."""
        return self.health.healthy

    @property
    def stalled(self) -> bool:
        """Records are waiting and the last try to write failed (or the writer task died)."""
        died = self._task is not None and self._task.done() and not self._stopping
        return died or (not self.health.healthy and self.pending > 0)

    @property
    def last_error(self) -> str | None:
        """The most recent write error (kept after recovery, for the operator)."""
        return self.health.last_error

    def start(self) -> None:
        """Start the background tasks; call inside the running event loop."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="repairlog-writer")
            self._task.add_done_callback(self._died)
            retention = retain(self._log, self._settings, self._retention_interval)
            self._retention = asyncio.create_task(retention, name="repairlog-retention")

    def announce(self, record_id: str, build: Callable[[], Record]) -> None:
        """Make the record ``record_id`` readable (:meth:`find`) from the moment the id is handed
        out, before it is complete and submitted: ``build`` makes it from what the request did so
        far. :meth:`submit` (or :meth:`withdraw`) ends the announcement."""
        self._unwritten.announce(record_id, build)

    def withdraw(self, record_id: str) -> None:
        """Forget an announced record that will not be submitted."""
        self._unwritten.withdraw(record_id)

    def find(self, record_id: str) -> dict[str, Any] | None:
        """A record not yet written (announced, queued or being written) as ``get`` returns a
        stored one (capture mode applied), or None."""
        settings = self._settings
        if settings.capture != "full" and self._digests is None:
            return None  # the log's key is not known yet: the log answers (or says it is down)
        found = self._unwritten.find
        return found(record_id, settings.capture, settings.max_error_body_bytes, self._digests)

    def submit(self, record: Record) -> bool:
        """Queue ``record``; False (and counted) when the queue is full or the writer stopped."""
        self._unwritten.withdraw(record.id)
        if self._stopping:
            self.health.drop(1, "stopped")
            return False
        pending = len(self._queue) + self._in_flight
        too_heavy = pending > 0 and self._bytes + record.size > self._settings.queue_bytes
        if pending >= self._settings.queue_size or too_heavy:
            self.health.drop(1, "queue_full")
            return False
        self._queue.append(record)
        self._unwritten.queued(record)
        self._bytes += record.size
        metrics.REPAIRLOG_QUEUE_DEPTH.set(self.pending)
        self._wake.set()
        if len(self._queue) >= self._settings.batch_size:
            self._full.set()
        return True

    async def stop(self) -> None:
        """Write what is queued (within ``stop_timeout`` s, the rest is dropped and counted) and
        stop the tasks. The log itself stays open: its owner closes it."""
        self._stopping = True
        self._wake.set()
        self._full.set()
        self._stop.set()
        if self._retention is not None:
            self._retention.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._retention
        if self._task is None or self._task.done():
            self._abandon()
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._task), self._stop_timeout)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._abandon()

    async def _run(self) -> None:
        size = self._settings.batch_size
        with contextlib.suppress(RepairLogError):  # else read before the first batch
            await self._key()
        while True:
            await self._wait_for_batch()
            if not self._queue:
                if self._stopping:
                    return
                continue
            await self._next_batch(size)

    async def _next_batch(self, size: int) -> None:
        """Write the next ``size`` records at most. A call of its own so that the batch, and the
        bodies its records hold, is let go once written, not held outside ``queue_bytes``
        while the writer waits for the next one."""
        batch = [self._queue.popleft() for _ in range(min(size, len(self._queue)))]
        self._in_flight = len(batch)
        left = await self._flush(batch)
        self._in_flight = 0
        kept = {record.id for record in left}
        self._unwritten.done(r for r in batch if r.id not in kept)
        self._bytes -= sum(r.size for r in batch) - sum(r.size for r in left)
        if left and self._stopping:  # no time to wait for the backend: count the rest
            self.health.drop(len(left) + len(self._queue), "backend")
            self._queue.clear()
            self._unwritten.clear()
            self._bytes = 0
        elif left:
            self._queue.extendleft(reversed(left))
            await self._pause()
        metrics.REPAIRLOG_QUEUE_DEPTH.set(self.pending)

    async def _wait_for_batch(self) -> None:
        if not self._queue and not self._stopping:
            self._wake.clear()
            await self._wake.wait()
        if len(self._queue) >= self._settings.batch_size or self._stopping:
            return
        self._full.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._settings.flush_interval):
                await self._full.wait()

    async def _pause(self) -> None:
        """Let a failing backend breathe before the next try (cut short by ``stop``)."""
        interval = self._settings.flush_interval
        pause = min(interval * 2 ** min(self.health.failures - 1, 16), max(interval, MAX_BACKOFF))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(pause):
                await self._stop.wait()

    async def _flush(self, batch: list[Record]) -> list[Record]:
        """Write ``batch``; what is left to try again (the backend was unavailable)."""
        settings = self._settings
        try:
            digests = await self._key()
        except RepairLogUnavailable as exc:
            self.health.failed(exc)
            return batch
        capture = settings.capture, settings.max_error_body_bytes, digests, self._checked
        captured = await asyncio.to_thread(capture_batch, batch, *capture)
        try:
            await self._write(captured)
        except RepairLogUnavailable as exc:
            self.health.failed(exc)
            return batch
        except RepairLogError as exc:
            if len(batch) == 1:
                self.health.refused(exc)
                return []
            return await self._one_by_one(batch, captured)
        self.health.succeeded(len(batch))
        metrics.REPAIRLOG_REPEATS.inc(sum(r.repeat_of is not None for r in captured))
        return []

    async def _one_by_one(self, batch: list[Record], captured: list[Record]) -> list[Record]:
        """Write a batch the backend refused record by record, to drop only the bad ones."""
        for n, record in enumerate(captured):
            try:
                await self._write([record])
            except RepairLogUnavailable as exc:
                self.health.failed(exc)
                return batch[n:]
            except RepairLogError as exc:
                self.health.refused(exc)
            else:
                self.health.succeeded(1)
        return []

    async def _key(self) -> Digests | None:
        """The log's keyed digests, read from it the first time (none needed for ``full``)."""
        if self._digests is None and self._settings.capture != "full":
            try:
                async with asyncio.timeout(self._write_timeout):
                    self._digests = Digests(await self._log.capture_key())
            except TimeoutError:
                raise RepairLogUnavailable("reading the log's key took too long") from None
        return self._digests

    async def _write(self, records: list[Record]) -> None:
        # A write that hangs (a server that stopped answering on an open connection) counts
        # as the backend being down; trying again is safe, backends ignore ids already stored.
        try:
            async with asyncio.timeout(self._write_timeout):
                await self._log.write(records)
        except TimeoutError:
            raise RepairLogUnavailable(
                f"a write took longer than {self._write_timeout:g} s"
            ) from None

    def _abandon(self) -> None:
        """Count what could not be written before the stop deadline."""
        left = len(self._queue) + self._in_flight
        if left:
            self.health.drop(left, "shutdown")
        self._queue.clear()
        self._unwritten.clear()
        self._in_flight = 0
        self._bytes = 0
        metrics.REPAIRLOG_QUEUE_DEPTH.set(0)

    def _died(self, task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self.health.died(error)
