"""Retention: the writer's second task, pruning the repair log by age and count."""

from __future__ import annotations

import asyncio
import logging

from proxy.errors import RepairLogError
from proxy.repairlog.base import RepairLog
from proxy.settings import RepairLogSettings

LOGGER = logging.getLogger("toolcall_guard.repairlog")


async def retain(log: RepairLog, settings: RepairLogSettings, interval: float) -> None:
    """Prune ``log`` at once, then every ``interval`` seconds, until cancelled."""
    while True:
        try:
            deleted = await log.prune(settings.retention_days, settings.max_records)
        except RepairLogError as exc:
            LOGGER.warning("repair log: retention failed: %s", exc)
        else:
            if deleted:
                LOGGER.info("repair log: retention deleted %d records", deleted)
        await asyncio.sleep(interval)
