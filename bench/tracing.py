"""What tracing costs (issue 36): toolcall-guard with OpenTelemetry on, as a target of its own
(``otel``), measured interleaved with the plain guard (tracing off) on the chat scenarios.

The traced guard exports to a local OTLP/HTTP sink (:func:`sink`, its own process: the
collector's CPU is not the proxy's) that answers every ``POST /v1/traces`` and
``/v1/metrics`` 200 with an empty export response, and counts what it got (``GET /count``), so
that the run proves spans did go out. CPU µs/req is the serving process's, all threads: the
batch processor's exporter thread counts. Tracing off is checked by what it imports: a fresh
process building the app without ``OTEL_*`` must load nothing of the SDK.
"""

from __future__ import annotations

import http.client
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from starlette.types import Receive, Scope, Send

from bench.phases import CHAT_BODIES, Scenario
from bench.report import verdict
from bench.servers import ROOT, Server
from bench.upstream import lifespan

TARGET = "otel"
NAME = "toolcall-guard, tracing on"
#: The goal: tracing on ÷ off, CPU per request.
GOAL = 1.10
#: The scenarios the traced guard is measured on (the issue's four chat bodies, every
#: concurrency; the goal is read at c10 on the JSON ones).
MEASURED = frozenset(Scenario(k, s, c).name for k, s in CHAT_BODIES for c in (1, 10, 32))
GOAL_SCENARIOS = ("small · json · c10", "history · json · c10")


def environment(sink_url: str) -> dict[str, str]:
    """The traced guard's variables: everything through the sink, exported as it ships (the
    batch processor's defaults, metrics every 60 s)."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": sink_url, "OTEL_SERVICE_NAME": "toolcall-guard-bench"}


def add_target(targets: dict[str, Server], upstream: str, workdir: Path, log_url: str) -> Server:
    """Start the OTLP sink and the traced guard (its own repair log beside ``log_url``'s), add
    the guard to ``targets``; the sink, for the caller to read and stop."""
    sink = Server("otlp-sink", logdir=workdir)
    traced = log_url.replace("repairs.sqlite3", "repairs-otel.sqlite3")
    targets[TARGET] = Server("guard", upstream, workdir, traced, env=environment(sink.url))
    return sink


class Sink:
    """An OTLP/HTTP collector that accepts and drops everything, counting it."""

    def __init__(self) -> None:
        self.posts: dict[str, int] = {}
        self.bytes = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        size = 0
        while True:
            message = await receive()
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        path = scope["path"]
        if scope["method"] == "GET" and path == "/count":
            body = orjson.dumps({"posts": self.posts, "bytes": self.bytes})
            kind = b"application/json"
        else:
            self.posts[path] = self.posts.get(path, 0) + 1
            self.bytes += size
            body, kind = b"", b"application/x-protobuf"  # an empty Export…ServiceResponse
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def sink() -> Sink:
    return Sink()


def received(sink: Server | None) -> dict[str, str]:
    """What the sink got so far, for the report's response check (nothing without a sink)."""
    if sink is None:
        return {}
    conn = http.client.HTTPConnection("127.0.0.1", sink.port, timeout=10)
    try:
        conn.request("GET", "/count")
        found = orjson.loads(conn.getresponse().read())
    finally:
        conn.close()
    return {"what the OTLP sink received": f"{found['posts']}, {found['bytes']:,} bytes"}


def stop(sink: Server | None) -> None:
    if sink is not None:
        sink.stop()


_OFF = """
import sys
from proxy.app import create_app
from proxy.settings import load_settings
app = create_app(load_settings(repair_log={"url": "memory://"}))
print(sum(m.startswith(("opentelemetry.sdk", "opentelemetry.exporter")) for m in sys.modules))
"""


def off_imports() -> int:
    """How many modules of the SDK and its exporters a guard without ``OTEL_*`` loads."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _OFF], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return int(done.stdout.strip())


def goal_rows(fig: Any, off_modules: int | None) -> list[tuple[str, ...]]:
    """The targets table's rows: (what, toolcall-guard, floor, goal, PASS/FAIL)."""
    rows: list[tuple[str, ...]] = []
    for name in GOAL_SCENARIOS:
        on, off = fig.get(name, TARGET, "cpu_us"), fig.get(name, "guard", "cpu_us")
        if math.isnan(on) or math.isnan(off):  # not measured in this run
            continue
        ratio = on / off
        rows.append(
            (
                f"tracing on ÷ off CPU µs/req, {name}",
                f"{on:.0f} ÷ {off:.0f} = {ratio:.2f}",
                "-",
                f"≤ {GOAL:.2f}",
                verdict(ratio <= GOAL),
            )
        )
    if off_modules is not None:
        rows.append(
            (
                "tracing off: OpenTelemetry SDK modules loaded",
                str(off_modules),
                "-",
                "0",
                verdict(off_modules == 0),
            )
        )
    return rows
