"""The repair log's tables, declared once (``proxy/repairlog/tables.py``): the versions in order,
and a store built by them holding what the backends write. Upgrading a store an earlier version
built: ``test_migrate.py``."""

from __future__ import annotations

import sqlite3
from functools import partial
from pathlib import Path

import psycopg
import pytest

from proxy.repairlog import open_repair_log
from proxy.repairlog.rows import STORED_FIELDS
from proxy.repairlog.tables import RECORD, TYPES, migrations

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_versions_count_from_one_and_every_column_has_a_type(dialect: str) -> None:
    steps = migrations(dialect)  # type: ignore[arg-type]
    assert [number for number, _ in steps] == list(range(1, len(steps) + 1))
    assert all(script.strip().endswith(";") for _, script in steps)
    assert {column.kind for column in RECORD} <= TYPES[dialect].keys()  # type: ignore[index]
    assert max(column.since for column in RECORD) <= len(steps)


def _sqlite_columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(path) as conn:
        names = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    conn.close()
    return names


def _postgres_columns(url: str, table: str) -> list[str]:
    with psycopg.connect(url) as conn:
        cur = conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            [table],
        )
        return [row[0] for row in cur.fetchall()]


@pytest.mark.parametrize(
    "dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_a_new_store_has_every_stored_field_in_records_and_turns(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The columns are declared once (``tables.RECORD``): ``records`` (built by four migrations)
    and ``turns`` (by one) hold exactly what a backend writes to either; ``turns`` keeps the
    summary columns before the bodies."""
    if dialect == "sqlite":
        path = tmp_path / "new.sqlite3"
        url = f"sqlite:///{path}"
    else:
        url = request.getfixturevalue("pg_url")
    log = open_repair_log(url)
    await log.open()
    await log.close()
    columns = (
        partial(_sqlite_columns, path) if dialect == "sqlite" else partial(_postgres_columns, url)
    )
    records, turns = columns("records"), columns("turns")
    assert sorted(records) == sorted(turns) == sorted(STORED_FIELDS)
    assert turns.index("packed") < turns.index("rules") < turns.index("received")
