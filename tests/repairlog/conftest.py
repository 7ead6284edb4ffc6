"""Backends for the repair-log contract suite: memory, SQLite, and the real PostgreSQL.

PostgreSQL is the server on 127.0.0.1:5432 (trust auth, user postgres, database ``test``); each
test gets a uniquely named schema, dropped afterwards. Without the server the PostgreSQL cases
are skipped with the reason, except under ``CI=true`` where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from proxy.repairlog import RepairLog, open_repair_log

PG_BASE = "postgresql://postgres@127.0.0.1:5432/test"

DURABLE = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
]
BACKENDS = [pytest.param("memory", id="memory"), *DURABLE]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def pg_server() -> str:
    """The PostgreSQL base URL, after checking the server answers."""
    try:
        with psycopg.connect(PG_BASE, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        detail = " ".join(str(exc).split())
        reason = f"PostgreSQL not reachable at {PG_BASE} ({detail})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true requires it")
        pytest.skip(reason)
    return PG_BASE


def pg_schema_url(base: str, schema: str) -> str:
    return f"{base}?options=-csearch_path%3D{schema}"


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A URL whose search_path is a fresh schema, dropped after the test."""
    schema = f"tcg_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    yield pg_schema_url(pg_server, schema)
    with psycopg.connect(pg_server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def log_factory(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], RepairLog]:
    """Builds (unopened) logs over one store: for a durable backend, a second one is the same
    store after a restart (or another replica); each ``memory://`` log is its own store."""
    if backend == "memory":
        return lambda: open_repair_log("memory://")
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path}/repairs.sqlite3"  # sqlite:////abs/path
    else:
        url = request.getfixturevalue("pg_url")
    return lambda: open_repair_log(url)


@pytest.fixture
def make_log(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Callable[[], RepairLog]:
    return log_factory(backend, request, tmp_path)


@pytest.fixture(params=DURABLE)
def make_durable_log(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], RepairLog]:
    """Like ``make_log``, over the backends whose records outlive the process."""
    return log_factory(str(request.param), request, tmp_path)


@pytest.fixture
async def log(make_log: Callable[[], RepairLog]) -> AsyncIterator[RepairLog]:
    repair_log = make_log()
    await repair_log.open()
    yield repair_log
    await repair_log.close()
