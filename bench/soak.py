"""``make soak``: a bounded run in which nothing may be lost.

    python -m bench.soak [--requests 50000] [--concurrency 32] [--backends sqlite,postgres]

For each repair-log backend: the strict OpenAI emulator and toolcall-guard, each in its own
process on loopback, and a client here sending ``--requests`` requests ``--concurrency`` at a
time: a third of them repaired, one in twelve rejected, a third streamed. Then it checks:

- zero errors: every answer is what its kind must get (status, outcome header, a whole stream,
  a record id exactly when a record is due);
- every record present: the log holds exactly the ids the answers named (repaired + rejected);
  dropped records (``toolcall_guard_repairlog_dropped_total``) are reported;
- RSS flat: the proxy's resident memory at 10 % of the run and at the end.

PostgreSQL is the server on 127.0.0.1:5432 (``--pg-url``); each run gets its own schema, dropped
afterwards. Without the server the PostgreSQL run is skipped with the reason.
``python -m bench.soak serve KIND PORT [UPSTREAM LOG_URL]`` is how the servers are started.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

ROOT = Path(__file__).resolve().parent.parent
PG_BASE = "postgresql://postgres@127.0.0.1:5432/test"
USER = {"role": "user", "content": "Read a.txt and summarise it"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
CLEAN = [
    USER,
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "the text"},
]
BROKEN = [
    USER,
    {"role": "assistant", "content": ""},
    {"role": "tool", "tool_call_id": "call_1", "content": "the text"},
]
REJECTED = [USER, {"role": "robot", "content": "beep"}]
#: One cycle of request kinds: 4 of 12 repaired, 1 rejected, 4 streamed.
CYCLE = (
    "clean", "repaired", "clean-stream", "repaired-stream", "clean", "repaired",
    "clean-stream", "repaired-stream", "clean", "clean-stream", "rejected", "clean-stream",
)  # fmt: skip


@dataclass
class Figures:
    """What one soak run measured."""

    backend: str
    requests: int = 0
    errors: int = 0
    expected: int = 0  # records due: repaired + rejected answers
    found: int = 0  # records in the log afterwards, among the ids answered
    stray: int = 0  # records in the log no answer named
    dropped: int = 0
    rss_10: int = 0
    rss_end: int = 0
    seconds: float = 0.0
    samples: list[str] = field(default_factory=list)  # the first few errors

    @property
    def lost(self) -> int:
        return self.expected - self.found - self.dropped

    def line(self) -> str:
        mib = 1024 * 1024
        return (
            f"{self.backend:8} requests={self.requests} errors={self.errors} "
            f"records expected={self.expected} found={self.found} dropped={self.dropped} "
            f"lost={self.lost} stray={self.stray} rss@10%={self.rss_10 / mib:.1f}MiB "
            f"rss@end={self.rss_end / mib:.1f}MiB duration={self.seconds:.1f}s "
            f"({self.requests / max(self.seconds, 1e-9):.0f} req/s)"
        )


# --- the servers ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """``python -m bench.soak serve …`` in a child process, on a free loopback port."""

    def __init__(self, kind: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (open for the server's life; stop() closes it)
        command = [sys.executable, "-m", "bench.soak", "serve", kind, str(self.port), *args]
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited ({self.process.returncode}):\n{self.output()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server did not listen within {timeout:g} s")

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        return 0

    def stop(self) -> None:
        """SIGTERM: uvicorn shuts down and the proxy drains its record queue."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def serve(kind: str, port: int, upstream: str = "", log_url: str = "") -> None:
    """Serve the emulator (``upstream``) or the proxy (``guard``) until SIGTERM."""
    import uvicorn

    app: Any
    if kind == "upstream":
        from proxy.emulator import create_emulator_app

        app = create_emulator_app("openai")
    else:
        from proxy.app import create_app
        from proxy.settings import load_settings

        settings = load_settings(
            upstreams={"openai": {"base_url": upstream + "/v1", "models": ["*"]}},
            routing={"default": "openai"},
            repair_log={"url": log_url},
        )
        app = create_app(settings)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_graceful_shutdown=5,
    )


# --- the client ----------------------------------------------------------------------------


def _request(kind: str, n: int) -> bytes:
    outcome = kind.split("-", maxsplit=1)[0]
    messages = {"clean": CLEAN, "repaired": BROKEN, "rejected": REJECTED}[outcome]
    body: dict[str, Any] = {"model": "gpt-4o", "messages": messages, "user": f"soak-{n}"}
    if kind.endswith("-stream"):
        body["stream"] = True
    return orjson.dumps(body)


def _problem(kind: str, status: int, headers: Any, body: bytes) -> str | None:
    """What is wrong with an answer to a request of ``kind``, if anything."""
    outcome = kind.split("-", maxsplit=1)[0]
    record = headers.get("x-toolcall-guard-record")
    want_status = 400 if outcome == "rejected" else 200
    if status != want_status:
        return f"{kind}: status {status}: {body[:200]!r}"
    if headers.get("x-toolcall-guard-outcome") != outcome:
        return f"{kind}: outcome {headers.get('x-toolcall-guard-outcome')}"
    if (record is not None) != (outcome != "clean"):
        return f"{kind}: record header {record!r}"
    if kind.endswith("-stream") and not body.endswith(b"data: [DONE]\n\n"):
        return f"{kind}: stream cut: {body[-80:]!r}"
    return None


class Load:
    """``requests`` requests from ``concurrency`` workers; what came back."""

    def __init__(self, url: str, requests: int, concurrency: int, guard: Server) -> None:
        self.url = url + "/v1/chat/completions"
        self.requests, self.concurrency, self.guard = requests, concurrency, guard
        self.next = 0
        self.done = 0
        self.ids: set[str] = set()
        self.figures = Figures("")

    async def run(self) -> None:
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            await asyncio.gather(*(self._worker(session) for _ in range(self.concurrency)))

    async def _worker(self, session: aiohttp.ClientSession) -> None:
        while self.next < self.requests:
            n = self.next
            self.next += 1
            kind = CYCLE[n % len(CYCLE)]
            try:
                await self._one(session, kind, n)
            except (aiohttp.ClientError, TimeoutError) as exc:
                self._error(f"{kind}: {exc!r}")
            self.done += 1
            if self.done == self.requests // 10:
                self.figures.rss_10 = self.guard.rss()

    async def _one(self, session: aiohttp.ClientSession, kind: str, n: int) -> None:
        headers = {"content-type": "application/json", "authorization": "Bearer sk-soak"}
        async with session.post(self.url, data=_request(kind, n), headers=headers) as response:
            body = await response.read()
            problem = _problem(kind, response.status, response.headers, body)
            record = response.headers.get("x-toolcall-guard-record")
        if problem is not None:
            self._error(problem)
        elif record is not None:
            self.ids.add(record)

    def _error(self, text: str) -> None:
        self.figures.errors += 1
        if len(self.figures.samples) < 5:
            self.figures.samples.append(text)


def _dropped(url: str) -> int:
    """``toolcall_guard_repairlog_dropped_total`` over every reason."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return int(
        sum(
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "toolcall_guard_repairlog_dropped_total"
        )
    )


# --- the stores ----------------------------------------------------------------------------


#: Every stored record's id (a conversation's repeated turns are kept in ``turns``).
STORED_IDS = "SELECT id FROM records UNION ALL SELECT id FROM turns"


@contextlib.contextmanager
def sqlite_store(folder: Path) -> Iterator[tuple[str, Any]]:
    path = folder / "soak.sqlite3"

    def stored() -> set[str]:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            return {row[0] for row in conn.execute(STORED_IDS)}

    yield f"sqlite:///{path}", stored


@contextlib.contextmanager
def postgres_store(base: str) -> Iterator[tuple[str, Any]]:
    import psycopg

    schema = f"tcg_soak_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{base}?options=-csearch_path%3D{schema}"

    def stored() -> set[str]:
        with psycopg.connect(url) as conn:
            return {row[0] for row in conn.execute(STORED_IDS)}

    try:
        yield url, stored
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def postgres_unreachable(base: str) -> str | None:
    """Why PostgreSQL at ``base`` cannot be used, or None when it answers."""
    import psycopg

    try:
        with psycopg.connect(base, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        return " ".join(str(exc).split())
    return None


# --- a run ---------------------------------------------------------------------------------


def soak(backend: str, log_url: str, stored: Any, requests: int, concurrency: int) -> Figures:
    """One soak run against the log at ``log_url``; ``stored()`` reads the ids it holds."""
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "empty.toml"
        config.write_text("# the soak passes everything it sets\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCALL_GUARD_")}
        env["TOOLCALL_GUARD_CONFIG"] = str(config)  # not the deployment config, nor its keys
        upstream = Server("upstream", env=env)
        try:
            guard = Server("guard", upstream.url, log_url, env=env)
            load = Load(guard.url, requests, concurrency, guard)
            started = time.perf_counter()
            try:
                asyncio.run(load.run())
                figures = load.figures
                figures.seconds = time.perf_counter() - started
                figures.rss_end = guard.rss()
                figures.dropped = _dropped(guard.url)
            finally:
                guard.stop()  # drains the record queue
        finally:
            upstream.stop()
    figures.backend, figures.requests = backend, requests
    figures.expected = sum(CYCLE[n % len(CYCLE)].split("-")[0] != "clean" for n in range(requests))
    ids = stored()
    figures.found = len(ids & load.ids)
    figures.stray = len(ids - load.ids)
    return figures


def run(backends: list[str], requests: int, concurrency: int, pg_url: str) -> list[Figures]:
    results = []
    for backend in backends:
        if backend == "postgres" and (why := postgres_unreachable(pg_url)):
            print(f"postgres skipped: not reachable at {pg_url} ({why})", flush=True)
            continue
        with tempfile.TemporaryDirectory() as folder:
            store = sqlite_store(Path(folder)) if backend == "sqlite" else postgres_store(pg_url)
            with store as (url, stored):
                figures = soak(backend, url, stored, requests, concurrency)
        print(figures.line(), flush=True)
        for sample in figures.samples:
            print("  error:", sample, flush=True)
        results.append(figures)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    sub = parser.add_subparsers(dest="command")
    serving = sub.add_parser("serve")
    serving.add_argument("kind", choices=("upstream", "guard"))
    serving.add_argument("port", type=int)
    serving.add_argument("rest", nargs="*")
    parser.add_argument("--requests", type=int, default=50_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--pg-url", default=PG_BASE)
    args = parser.parse_args(argv)
    if args.command == "serve":
        serve(args.kind, args.port, *args.rest)
        return 0
    results = run(args.backends.split(","), args.requests, args.concurrency, args.pg_url)
    bad = [f for f in results if f.errors or f.lost or f.stray or f.found != f.expected]
    return 1 if bad or not results else 0


if __name__ == "__main__":
    sys.exit(main())
