"""How the repair-log writer is doing: written and dropped counts, the failures in a row, the
last error; each change logged once and counted in the metrics (``/readyz`` reads it)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from proxy import metrics
from proxy.errors import RepairLogError

LOGGER = logging.getLogger("toolcall_guard.repairlog")


@dataclass(slots=True)
class Health:
    """The writer's record of its own writes."""

    written: int = 0  # records written
    dropped: int = 0  # records dropped (queue full, refused, shutdown…)
    failures: int = 0  # failed tries in a row
    healthy: bool = True  # False from a failed write until the next successful one
    last_error: str | None = None  # kept after recovery, for the operator

    def succeeded(self, count: int) -> None:
        self.written += count
        metrics.REPAIRLOG_WRITTEN.inc(count)
        if not self.healthy:
            LOGGER.warning("repair log: writing again after errors")
        self.healthy = True
        self.failures = 0

    def failed(self, exc: RepairLogError) -> None:
        metrics.REPAIRLOG_ERRORS.inc()
        if self.healthy:
            LOGGER.warning("repair log: write failed, keeping records until it recovers: %s", exc)
        self.healthy = False
        self.failures += 1
        self.last_error = str(exc)

    def refused(self, exc: RepairLogError) -> None:
        metrics.REPAIRLOG_ERRORS.inc()
        LOGGER.warning("repair log: a record was refused and dropped: %s", exc)
        self.drop(1, "invalid")

    def drop(self, count: int, reason: str) -> None:
        self.dropped += count
        metrics.REPAIRLOG_DROPPED.labels(reason).inc(count)

    def died(self, error: BaseException) -> None:
        self.healthy = False
        self.last_error = f"writer task died: {error!r}"
        LOGGER.error("repair log: %s", self.last_error, exc_info=error)
