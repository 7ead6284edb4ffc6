"""SQLite connections: one per thread, re-opened when the file at the path changed under it,
in WAL mode, and the schema migrations the writer's connection applies when it opens."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from proxy.repairlog.base import RepairLogError, RepairLogUnavailable
from proxy.repairlog.sql import migrations


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


class Handle:
    """One thread's connection, re-opened when the file at ``path`` changed under it."""

    def __init__(self, path: Path, *, writer: bool, busy_timeout: float = 5.0) -> None:
        self.path = path
        self.writer = writer
        self.busy_timeout = busy_timeout  # how long a statement waits on another's lock
        self.conn: sqlite3.Connection | None = None
        self.ident: tuple[int, int] | None = None

    def get(self) -> sqlite3.Connection:
        ident = _identity(self.path)
        if self.conn is not None and ident == self.ident:
            return self.conn
        self.drop()
        if ident is None and not self.writer:
            raise RepairLogUnavailable(f"{self.path} does not exist")
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout
        )
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            if self.writer:
                _migrate(conn)
        except BaseException:
            conn.close()
            raise
        self.conn, self.ident = conn, _identity(self.path)
        return conn

    def drop(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            with contextlib.suppress(sqlite3.Error):  # a broken connection: nothing to release
                conn.close()


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _statements(script: str) -> Iterator[str]:
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            yield buffer
            buffer = ""


def _migrate(conn: sqlite3.Connection) -> None:
    """Apply the ``schema/sqlite_*.sql`` files newer than ``PRAGMA user_version``."""
    steps = migrations("sqlite")
    with transaction(conn):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if steps and version > steps[-1][0]:
            raise RepairLogError(f"schema version {version} is newer than this toolcall-guard")
        for number, script in steps:
            if number > version:
                for statement in _statements(script):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")
