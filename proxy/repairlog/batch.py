"""One batch of records written to a SQL backend, planned apart from the driver.

Both SQL backends write a batch the same way, in one transaction: look up the first record of
each repeat key (:mod:`.conversation`), build the rows (packing the bodies, :mod:`.packing`),
insert them, ask which referenced payloads are stored and when they were last used, insert the
missing ones, touch the stale ones, count the repeats on their first records; once the
transaction committed, the writer's memories (:mod:`.carry`) learn what is stored.
:class:`Batch` holds everything but the statements, which the backend runs between its steps
(SQLite on its writer thread; PostgreSQL on the event loop, the packing off it). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from proxy.repairlog.carry import Sequences, StoredDigests
from proxy.repairlog.conversation import RepeatKey, assign_repeats, repeat_keys
from proxy.repairlog.packing import Packer
from proxy.repairlog.payloads import stored_blob
from proxy.repairlog.record import Record
from proxy.repairlog.rows import record_row, rule_rows
from proxy.repairlog.sql import LAST_USED_SLACK, TRUSTED_FOR, epoch

Rows = list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class PayloadWrites:
    """What a batch writes to ``payloads``, and what its writer learns once it committed."""

    rows: list[tuple[bytes, int, bytes]]  # (digest, last_used, stored blob) to insert
    stale: list[bytes]  # stored digests whose ``last_used`` is to be set to the batch's time
    used: dict[bytes, int]  # every referenced digest and its ``last_used`` after the batch


def payload_writes(
    packer: Packer, referenced: set[bytes], stored: dict[bytes, int], now: int
) -> PayloadWrites:
    """The payloads of ``referenced`` (what ``packer``'s bodies reference) that are not
    ``stored`` yet (compressed), and the stored ones whose ``last_used`` is stale (older than
    ``now`` by more than :data:`~proxy.repairlog.sql.LAST_USED_SLACK`)."""
    rows = [(d, now, stored_blob(packer.payload(d))) for d in referenced - stored.keys()]
    stale = [d for d, used in stored.items() if used < now - LAST_USED_SLACK]
    used = {**stored, **dict.fromkeys(stale, now), **{row[0]: now for row in rows}}
    return PayloadWrites(rows, stale, used)


@dataclass(slots=True)
class Memory:
    """What a backend's writer remembers between batches (:mod:`.carry`), used by one batch at a
    time; :meth:`forget_stored` when the database may not hold what it held (records deleted, a
    new connection to what may be another database)."""

    sequences: Sequences = field(default_factory=Sequences)
    stored: StoredDigests = field(default_factory=lambda: StoredDigests(TRUSTED_FOR))

    def forget_stored(self) -> None:
        self.stored.clear()


class Batch:
    """The steps of writing ``records``, in order: :meth:`lookups`, :meth:`rows`,
    :meth:`unsure`, :meth:`payloads`, :meth:`bumps`, then :meth:`committed` after the commit."""

    def __init__(self, records: Sequence[Record], memory: Memory) -> None:
        self.records = records
        self.keys = repeat_keys(records)
        #: The batch's time, as the ``last_used`` of the payloads it references.
        self.latest = epoch(max(r.created_at for r in records))
        self.packer = Packer(memory.sequences)
        self._stored = memory.stored
        self._bumps: dict[str, tuple[int, datetime]] = {}
        self._referenced: set[bytes] = set()
        self._fresh: dict[bytes, int] = {}
        self._used: dict[bytes, int] = {}

    def lookups(self) -> set[RepeatKey]:
        """The repeat keys whose first record the database may hold already."""
        return set(self.keys.values())

    def rows(
        self,
        known: dict[RepeatKey, str],
        ts: Callable[[datetime], Any],
        blob: Callable[[bytes], Any],
        value: Callable[[Any], Any] | None = None,
    ) -> tuple[Rows, Rows, Rows]:
        """The ``records`` (first records), ``turns`` (repeats) and ``record_rules`` rows, the
        repeats told by ``known`` (each key's first record found stored). ``ts`` and ``blob``
        adapt times and JSON to the driver, ``value`` every value of a record row."""
        self._bumps = assign_repeats(self.records, self.keys, known)

        def row(record: Record) -> tuple[Any, ...]:
            found = record_row(record, ts, blob, self.packer, self.keys)
            return found if value is None else tuple(map(value, found))

        firsts = [r for r in self.records if r.repeat_of is None]
        repeats = [r for r in self.records if r.repeat_of is not None]
        rules = [row for r in firsts for row in rule_rows(r, ts)]
        return [row(r) for r in firsts], [row(r) for r in repeats], rules

    def unsure(self) -> list[bytes]:
        """The payloads the rows reference that the database is to say it holds (with their
        ``last_used``): those the writer does not know it stored lately."""
        self._referenced = self.packer.referenced(partial(self._stored.trusts, now=self.latest))
        self._fresh = self._stored.fresh(self._referenced, self.latest)
        return [d for d in self._referenced if d not in self._fresh]

    def payloads(self, stored: Mapping[bytes, int]) -> PayloadWrites:
        """What to write to ``payloads``, given the ``last_used`` of the :meth:`unsure`
        digests the database holds."""
        known = {**stored, **self._fresh}
        writes = payload_writes(self.packer, self._referenced, known, self.latest)
        self._used = writes.used
        return writes

    def bumps(self, ts: Callable[[datetime], Any]) -> list[list[Any]]:
        """:meth:`~proxy.repairlog.sql.Dialect.bump`'s parameters for each first record repeated."""
        return [[count, ts(seen), ts(seen), first] for first, (count, seen) in self._bumps.items()]

    def committed(self) -> None:
        """The writer's memories learn what the committed batch stored."""
        self._stored.update(self._used)
        self.packer.confirm(self._used, self._stored.generation)
