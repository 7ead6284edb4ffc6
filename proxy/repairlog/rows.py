"""Records as database rows (the column order of :data:`~proxy.repairlog.base.ALL_FIELDS`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from proxy.repairlog.base import dumps, rule_counts
from proxy.repairlog.record import Record, utcnow


def record_row(
    record: Record, ts: Callable[[datetime], Any], blob: Callable[[bytes], Any]
) -> tuple[Any, ...]:
    """One ``records`` row; ``ts`` and ``blob`` adapt timestamps and JSON to the driver."""

    def json(value: Any) -> Any:
        return None if value is None else blob(dumps(value))

    return (
        record.id,
        ts(record.created_at),
        record.upstream,
        record.model,
        record.path,
        record.stream,
        record.outcome,
        record.upstream_status,
        record.upstream_error_kind,
        record.request_id,
        record.duration_ms,
        record.sanitize_ms,
        record.upstream_ms,
        record.status,
        record.proxy_error,
        record.ending,
        blob(dumps(rule_counts(record.findings))),
        blob(dumps(record.findings)),
        record.upstream_error,
        json(record.received),
        json(record.forwarded),
        json(record.attempts),
    )


def rule_rows(record: Record, ts: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    """``record_rules`` rows: (rule, created_at, record_id, findings)."""
    when = ts(record.created_at)
    return [(rule, when, record.id, count) for rule, count in rule_counts(record.findings).items()]


def cutoff_for(retention_days: float) -> datetime | None:
    """The moment before which records are too old; None when that is before year 1."""
    try:
        return utcnow() - timedelta(days=retention_days)
    except OverflowError:
        return None
