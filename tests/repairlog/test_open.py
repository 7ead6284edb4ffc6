"""``repair_log.url`` → backend; a bad URL is a ConfigError naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.errors import ConfigError
from proxy.repairlog import MemoryRepairLog, SQLiteRepairLog, open_repair_log
from proxy.repairlog.postgres import PostgresRepairLog


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///data/repairs.sqlite3", Path("data/repairs.sqlite3")),
        ("sqlite:////var/lib/tg/repairs.db", Path("/var/lib/tg/repairs.db")),
        ("SQLITE:///x.db", Path("x.db")),
    ],
)
def test_sqlite_urls(url: str, path: Path) -> None:
    log = open_repair_log(url)
    assert isinstance(log, SQLiteRepairLog)
    assert log.path == path


@pytest.mark.parametrize("url", ["postgresql://u@db/x", "postgres://u:p@h:5433/x?sslmode=off"])
def test_postgres_urls_open_nothing_yet(url: str) -> None:
    log = open_repair_log(url)
    assert isinstance(log, PostgresRepairLog)
    assert log.url == url


def test_memory_url() -> None:
    assert isinstance(open_repair_log("memory://"), MemoryRepairLog)


@pytest.mark.parametrize(
    "url", ["mysql://db/x", "data/repairs.sqlite3", "", "redis://x", "file:///x.db"]
)
def test_unknown_scheme_names_the_key_and_the_allowed_schemes(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_repair_log(url)
    message = str(caught.value)
    assert "repair_log.url" in message
    for scheme in ("sqlite:///", "postgresql://", "memory://"):
        assert scheme in message


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite://host", "sqlite:///:memory:"])
def test_sqlite_url_without_a_file(url: str) -> None:
    with pytest.raises(ConfigError, match=r"repair_log\.url"):
        open_repair_log(url)


def test_opening_does_no_io(tmp_path: Path) -> None:
    open_repair_log(f"sqlite:///{tmp_path}/sub/dir/x.db")
    assert not (tmp_path / "sub").exists()
