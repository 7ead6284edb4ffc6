"""The repair log: every repaired, rejected, warned or upstream-rejected request, kept durably.

``open_repair_log(url)`` picks the backend from ``repair_log.url``; a :class:`RecordWriter` feeds
it from a bounded queue so that recording never slows or fails a proxied request.

- ``sqlite:///relative/path`` or ``sqlite:////absolute/path`` (default): :mod:`.sqlite`
- ``postgresql://…`` or ``postgres://…`` (extra ``toolcall-guard[postgres]``): :mod:`.postgres`
- ``memory://``: :mod:`.memory`, nothing survives the process
"""

from __future__ import annotations

from proxy.errors import ConfigError, InvalidQuery, RepairLogError, RepairLogUnavailable
from proxy.repairlog.base import RecordQuery, RepairLog
from proxy.repairlog.capture import apply_capture
from proxy.repairlog.classify import classify_upstream_error
from proxy.repairlog.diff import record_diff
from proxy.repairlog.memory import MemoryRepairLog
from proxy.repairlog.record import OUTCOMES, Record, new_record_id
from proxy.repairlog.sqlite import SQLiteRepairLog
from proxy.repairlog.writer import RecordWriter

__all__ = [
    "OUTCOMES",
    "SCHEMES",
    "InvalidQuery",
    "MemoryRepairLog",
    "Record",
    "RecordQuery",
    "RecordWriter",
    "RepairLog",
    "RepairLogError",
    "RepairLogUnavailable",
    "SQLiteRepairLog",
    "apply_capture",
    "classify_upstream_error",
    "new_record_id",
    "open_repair_log",
    "record_diff",
]

SCHEMES = ("sqlite", "postgresql", "postgres", "memory")


def open_repair_log(url: str) -> RepairLog:
    """The backend ``url`` names, not yet opened (no I/O here: ``await log.open()`` does it).

    Raises :class:`~proxy.errors.ConfigError` naming ``repair_log.url`` for an unknown scheme,
    a SQLite URL without a path, or PostgreSQL without the ``postgres`` extra installed.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        allowed = "sqlite:///relative/path, sqlite:////absolute/path, postgresql://…, memory://"
        raise ConfigError(f"repair_log.url: unsupported URL {url!r}; allowed schemes: {allowed}")
    scheme = scheme.lower()
    if scheme == "memory":
        return MemoryRepairLog()
    if scheme == "sqlite":
        return SQLiteRepairLog(_sqlite_path(url, rest))
    try:
        from proxy.repairlog.postgres import PostgresRepairLog
    except ImportError as exc:
        raise ConfigError(
            "repair_log.url: a PostgreSQL repair log needs psycopg: "
            "pip install 'toolcall-guard[postgres]'"
        ) from exc
    return PostgresRepairLog(url)


def _sqlite_path(url: str, rest: str) -> str:
    # sqlite:///data/x.db → "/data/x.db" after the scheme: the first slash ends the (empty) host.
    path = rest.split("?", 1)[0]
    if not path.startswith("/") or len(path) < 2 or path == "/:memory:":
        raise ConfigError(
            f"repair_log.url: {url!r} names no file; use sqlite:///relative/path "
            "or sqlite:////absolute/path (memory:// for a log in memory)"
        )
    return path[1:]
