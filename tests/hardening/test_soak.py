"""The short soak: ``make soak``'s run with 2,000 requests, on SQLite and on PostgreSQL.

Real processes on loopback (the strict OpenAI emulator, toolcall-guard), 32 requests at a time,
a third repaired, some rejected, a third streamed: no error, every record in the log, nothing
dropped, and the proxy's memory no higher at the end than a little over what it was at 10 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import soak

REQUESTS = 2_000
#: Allowed RSS growth from 10 % to the end of a short run (allocator and cache warm-up).
RSS_SLACK = 24 * 1024 * 1024


def check(figures: soak.Figures) -> None:
    assert figures.errors == 0, figures.samples
    assert figures.expected == 834  # 5 of every 12 requests are due a record
    assert figures.found == figures.expected, figures.line()
    assert (figures.dropped, figures.stray) == (0, 0), figures.line()
    assert figures.rss_10 > 0
    assert figures.rss_end < figures.rss_10 + RSS_SLACK, figures.line()


@pytest.mark.slow
def test_soak_sqlite(tmp_path: Path) -> None:
    with soak.sqlite_store(tmp_path) as (url, stored):
        check(soak.soak("sqlite", url, stored, REQUESTS, concurrency=32))


@pytest.mark.slow
@pytest.mark.postgres
def test_soak_postgres(pg_server: str) -> None:
    with soak.postgres_store(pg_server) as (url, stored):
        check(soak.soak("postgres", url, stored, REQUESTS, concurrency=32))
