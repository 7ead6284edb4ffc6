"""Faults under load (issue 26): concurrent clients, chat and Responses, JSON and streamed,
~40 % broken histories, against an upstream that resets, cuts and stalls mid-body, answers
5xx, 429 and a catalogued 400, or is slow (:mod:`tests.hardening.faulty`); on SQLite and on
PostgreSQL. Afterwards:

- no 5xx of the proxy's own: a 502/504 only where the upstream gave nothing usable;
- every record id handed out (``x-toolcall-guard-record``) is readable, its status and ending
  equal to what its client saw; the log holds exactly those records, none twice;
- descriptors back to idle (bounded wait), and not one ERROR line in the log.

``TOOLCALL_GUARD_LOAD_SECONDS`` and ``TOOLCALL_GUARD_LOAD_CLIENTS`` size the run (8 clients for
10 s per backend by default: well under a minute in all).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import psycopg
import pytest

from tests.hardening.conftest import ORPHAN, Guard, RawUpstream, eventually
from tests.hardening.descriptors import descriptors
from tests.hardening.faulty import READ_TIMEOUT, dispatch

SECONDS = float(os.environ.get("TOOLCALL_GUARD_LOAD_SECONDS", "10"))
CLIENTS = int(os.environ.get("TOOLCALL_GUARD_LOAD_CLIENTS", "8"))
BROKEN = 0.4
#: Faults by weight; ``client_gone`` is a stream its client leaves after the first event.
FAULTS = {
    "ok": 5,
    "slow": 2,
    "reset_before": 1,
    "stall_before": 1,
    "cut_mid": 2,
    "stall_mid": 2,
    "overloaded": 1,
    "rate_limited": 1,
    "refused": 1,
    "client_gone": 1,
}
#: The proxy's own answers when the upstream gave nothing usable: the only 5xx it may send.
OWN = {"reset_before": (502, "upstream_unavailable"), "stall_before": (504, "upstream_timeout")}
ORPHAN_OUTPUT = [
    {"role": "user", "content": "read a.txt"},
    {"type": "function_call_output", "call_id": "call_lost", "output": "hello"},
]


@dataclass
class Seen:
    """One exchange as its client saw it."""

    fault: str
    status: int
    record: str | None
    ending: str
    error_code: str | None = None


def request_for(rng: random.Random) -> tuple[str, str, bytes, bool]:
    fault = rng.choices(list(FAULTS), weights=list(FAULTS.values()))[0]
    stream = fault == "client_gone" or rng.random() < 0.5
    broken = rng.random() < BROKEN
    if rng.random() < 0.5:
        path, history = "/chat/completions", {"messages": ORPHAN if broken else ORPHAN[:1]}
    else:
        path, history = "/responses", {"input": ORPHAN_OUTPUT if broken else ORPHAN_OUTPUT[:1]}
    body = orjson.dumps({"model": "gpt-4o", **history, "stream": stream})
    return fault, path, body, stream


#: A JSON body cut short: its client cannot tell whether the upstream broke off or went silent
#: (under load even the ``slow`` fault can outlast the read timeout), only that it was cut.
CUT = "cut"
CUTS = ("upstream_cut", "upstream_timeout")


def ending_seen(body: bytes | None, stream: bool) -> tuple[str, str | None]:
    """How the answer ended, from what the client got, and the error code it was told."""
    if body is None:
        return CUT, None
    last = body.rstrip(b"\n").rsplit(b"\n\n", 1)[-1]
    if stream and last.startswith(b'data: {"error"'):
        code = orjson.loads(last[len(b"data: ") :])["error"]["code"]
        return ("upstream_timeout" if code == "upstream_timeout" else "upstream_cut"), code
    return "complete", None


async def exchange(client: httpx.AsyncClient, guard: Guard, rng: random.Random) -> Seen:
    fault, path, body, stream = request_for(rng)
    headers = {"x-fault": "streams_on" if fault == "client_gone" else fault}
    async with client.stream("POST", guard.v1 + path, content=body, headers=headers) as r:
        record = r.headers.get("x-toolcall-guard-record")
        if fault == "client_gone":
            async for _ in r.aiter_raw():
                break  # leaving mid-stream: the connection is dropped
            return Seen(fault, r.status_code, record, "client_gone")
        try:
            got: bytes | None = await r.aread()
        except httpx.RemoteProtocolError:  # a sized body cut short: its connection was cut
            got = None
    ending, code = ending_seen(got, stream)
    if r.status_code >= 500 and got is not None and fault != "overloaded":  # the proxy's own
        code = orjson.loads(got)["error"]["code"]
    return Seen(fault, r.status_code, record, ending, code)


async def load(guard: Guard, seconds: float, clients: int) -> list[Seen]:
    seen: list[Seen] = []
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client_loop(n: int) -> None:
        rng = random.Random(n)
        while time.monotonic() < deadline:
            seen.append(await exchange(http, guard, rng))

    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        await asyncio.gather(*(client_loop(n) for n in range(clients)))
    return seen


def stored_ids(url: str) -> list[str]:
    """Every record id in the store, read from its tables: the API lists a conversation's
    repeated turns only under their first record, and a duplicate must not hide there."""
    sql = "SELECT id FROM records UNION ALL SELECT id FROM turns"
    if url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            return [row[0] for row in conn.execute(sql)]
    with psycopg.connect(url) as pg:
        return [row[0] for row in pg.execute(sql)]


def check(http: httpx.Client, guard: Guard, seen: list[Seen], url: str) -> None:
    for s in seen:  # no 5xx of the proxy's own: it only speaks for an upstream that failed
        if s.fault in OWN:
            assert (s.status, s.error_code) == OWN[s.fault], s
        elif s.status >= 500 and s.fault != "overloaded":  # a slow answer outlasting the timeout
            assert (s.status, s.error_code) == (504, "upstream_timeout"), s
    handed = [s for s in seen if s.record is not None]
    for s in handed:  # readable at once, status and ending as the client saw them
        got = http.get(f"{guard.url}/repairs/{s.record}")
        assert got.status_code == 200, (s, got.text)
        record = got.json()
        ending = record["ending"] if s.ending != CUT or record["ending"] not in CUTS else CUT
        assert (record["status"], ending) == (s.status, s.ending), (s, record)
    writer = guard.app.state.writer
    eventually(lambda: writer.pending == 0, within=20, what="every record written")
    assert writer.health.dropped == 0
    ids = stored_ids(url)
    assert len(ids) == len(set(ids)), "a record was written twice"
    assert sorted(ids) == sorted(s.record for s in handed)  # every record, and only those


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def repair_log_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'repairs.sqlite3'}"
    url: str = request.getfixturevalue("pg_url")
    return url


def test_faults_under_load_are_told_truthfully(
    repair_log_url: str,
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    caplog: pytest.LogCaptureFixture,
) -> None:
    upstream = raw_upstream(dispatch)
    guard = start_guard(
        {"openai": upstream.url},
        upstream_overrides={"read_timeout": READ_TIMEOUT},
        repair_log_settings={"url": repair_log_url, "flush_interval": 0.05},
    )
    warm_up = asyncio.run(load(guard, 1.0, CLIENTS))  # pools, threads, connections opened
    eventually(lambda: upstream.open == 0, what="the warm-up's upstream connections closed")
    idle = descriptors()

    seen = warm_up + asyncio.run(load(guard, SECONDS, CLIENTS))

    faults = Counter(s.fault for s in seen)
    assert set(faults) == set(FAULTS), faults  # every fault was met
    endings = Counter(s.ending for s in seen if s.record is not None)
    assert set(endings) == {"complete", CUT, *CUTS, "client_gone"}, endings
    with httpx.Client(timeout=10) as http:  # closed before counting descriptors
        check(http, guard, seen, repair_log_url)
    eventually(lambda: upstream.open == 0, within=10, what="every upstream connection closed")
    eventually(lambda: descriptors().idle_like(idle), within=10, what=f"back to {idle}")
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []  # no traceback, no uvicorn line for a cut answer, nothing unretrieved
