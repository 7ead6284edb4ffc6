"""SQLite connections: one per thread, re-opened when the file at the path changed under it,
in WAL mode; the schema migrations the writer's connection applies when it opens; the
statements the writer runs, in few shapes (:func:`insert_many`, :func:`select_in`); and the
calls on the backend's threads, whose database errors become the repair log's
(:func:`run_on`, :func:`guarded`)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from proxy.errors import RepairLogError, RepairLogUnavailable
from proxy.repairlog.tables import migrations

P = ParamSpec("P")
T = TypeVar("T")

#: Bound parameters per statement: SQLite's historic minimum limit (SQLITE_MAX_VARIABLE_NUMBER).
MAX_VARIABLES = 999
#: Values per ``IN (…)`` list (a power of two, under :data:`MAX_VARIABLES`).
MAX_IN = 512

# The sqlite3 module binds str, int, float and bytearray as they are, but looks every other
# parameter up as an adaptable object first: a lookup that raises and formats an AttributeError
# on the way, about 7,000 instructions, for each None, bool and bytes of a row (a record row has
# ten or so). An adapter registered for the type is found at once; these give what the module
# would have bound anyway (NULL, an integer, a blob), all in C.
sqlite3.register_adapter(type(None), {None: None}.get)
sqlite3.register_adapter(bool, int)
sqlite3.register_adapter(bytes, bytearray)


def statement_sizes(count: int, most: int) -> Iterator[int]:
    """``count`` rows or values cut into statements of ``most``, then of powers of two.

    The sqlite3 module keeps prepared statements by their text: with one text per count, nearly
    every batch's statements were parsed and planned anew (a tenth of the writer's work); with
    these, a handful of texts per table are prepared once.
    """
    while count >= most:
        yield most
        count -= most
    while count:
        size = 1 << (count.bit_length() - 1)
        yield size
        count -= size


def insert_many(conn: sqlite3.Connection, insert: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` with a few multi-row statements rather than one statement per row.

    Each statement releases and takes back the GIL: while the event loop keeps the GIL busy
    (a proxy under load), every take-back waits up to the switch interval (5 ms), which made
    ``executemany`` write ~50 records a second where this writes hundreds.
    """
    if not rows:
        return
    width = len(rows[0])
    start = 0
    for size in statement_sizes(len(rows), MAX_VARIABLES // width):
        chunk = rows[start : start + size]
        start += size
        values = ", ".join(["(" + ", ".join("?" * width) + ")"] * size)
        conn.execute(insert + values, [value for row in chunk for value in row])


def select_in(
    conn: sqlite3.Connection, sql: str, values: Sequence[Any], params: Sequence[Any] = ()
) -> list[Any]:
    """The rows of ``sql`` (its ``params`` first) followed by ``(?, …)`` for ``values``, in
    statements of few shapes (:func:`statement_sizes`)."""
    found: list[Any] = []
    start = 0
    for size in statement_sizes(len(values), MAX_IN):
        part = values[start : start + size]
        start += size
        marks = "(" + ", ".join("?" * size) + ")"
        found += conn.execute(sql + marks, [*params, *part]).fetchall()
    return found


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
    """Apply the migrations (:mod:`.tables`) newer than ``PRAGMA user_version``."""
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


async def run_on(
    pool: ThreadPoolExecutor | None,
    handle: Handle | None,
    fn: Callable[P, T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """``fn`` on a thread of ``pool`` (:func:`guarded`, with ``handle``)."""
    if pool is None:
        raise RepairLogUnavailable("the repair log is not open")
    job = partial(guarded, handle, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(pool, job)


def guarded(handle: Handle | None, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn``; a database or file error drops the writer's connection (the next call
    re-opens it) and becomes :class:`RepairLogUnavailable`, except an error about the data
    itself (trying it again cannot help): that one is a plain :class:`RepairLogError`."""
    try:
        return fn(*args, **kwargs)
    except (sqlite3.Error, OSError) as exc:
        if handle is not None:
            handle.drop()
        if isinstance(exc, sqlite3.DataError | sqlite3.IntegrityError):
            raise RepairLogError(f"sqlite: {exc}") from exc
        raise RepairLogUnavailable(f"sqlite: {exc}") from exc
