"""Records not yet written, readable all the same (issue 16 item 3).

The id of a record goes out in ``x-toolcall-guard-record`` as the answer starts; the record is
submitted when the answer ends and written in the writer's next batch. Between those moments
``GET /repairs/{id}`` finds it here: an announced record is built on demand from what its
request did so far, a submitted one is served as queued. The capture mode applies as it does
to stored records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from proxy.repairlog.base import dumps, stored
from proxy.repairlog.capture import Digests, apply_capture
from proxy.repairlog.record import Record


class Unwritten:
    """Announced and queued records by id; at most ``limit`` announced (the oldest go first)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._announced: dict[str, Callable[[], Record]] = {}  # ids out, records not submitted
        self._queued: dict[str, Record] = {}  # submitted, not yet written nor dropped

    def announce(self, record_id: str, build: Callable[[], Record]) -> None:
        if len(self._announced) >= self._limit:
            del self._announced[next(iter(self._announced))]
        self._announced[record_id] = build

    def withdraw(self, record_id: str) -> None:
        self._announced.pop(record_id, None)

    def queued(self, record: Record) -> None:
        self._queued[record.id] = record

    def done(self, records: Iterable[Record]) -> None:
        """Written, refused or dropped: readable from the log now (or never), not from here."""
        for record in records:
            self._queued.pop(record.id, None)

    def clear(self) -> None:
        self._announced.clear()
        self._queued.clear()

    def find(
        self, record_id: str, capture: str, max_error_bytes: int, digests: Digests | None = None
    ) -> dict[str, Any] | None:
        """The record as a backend's ``get`` returns it (``capture`` applied with the log's
        ``digests``), or None."""
        record = self._queued.get(record_id)
        if record is None:
            build = self._announced.get(record_id)
            record = None if build is None else build()
        if record is None:
            return None
        captured = apply_capture(record, capture, max_error_bytes, digests)
        found: dict[str, Any] = orjson.loads(dumps(stored(captured)))  # a copy: not shared
        return found
