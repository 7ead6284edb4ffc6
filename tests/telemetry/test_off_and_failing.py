"""Tracing is off unless an OTLP endpoint is set (nothing of the SDK imported, no hook paid
beyond a None test), and an exporter that fails or hangs never slows or fails a request."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from proxy.app import create_app
from proxy.settings import load_settings
from tests.e2e.conftest import silent_server
from tests.servers import running
from tests.telemetry.conftest import Scripted

OFF = """
import sys
import threading
from proxy.app import create_app
from proxy.settings import load_settings
app = create_app(load_settings(repair_log={"url": "memory://"}))
assert app.state.proxy.tracing is None
ours = ("opentelemetry.sdk", "opentelemetry.exporter", "proxy.telemetry.")
print(sorted(m for m in sys.modules if m.startswith(ours)))
"""


def test_off_by_default_nothing_of_the_sdk_is_imported() -> None:
    """(FastAPI itself imports the OpenTelemetry API: checked are the SDK, the exporters and
    this project's modules that need them.)"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = os.getcwd()
    command = [sys.executable, "-c", OFF]
    done = subprocess.run(command, check=False, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['proxy.telemetry.names']"


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A collector that accepts connections and never answers."""
    with silent_server() as url:
        yield url.removesuffix("/v1")


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("collector", ["hanging", "refusing"])
def test_a_collector_that_hangs_or_refuses_never_slows_a_request(
    collector: str, black_hole: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint = black_hole if collector == "hanging" else _closed_port()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")  # export at once: while requests run
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "50")
    scripted = Scripted()
    with running(scripted) as upstream:
        upstreams = {"scripted": {"base_url": upstream + "/v1", "models": ["gpt-*"]}}
        settings = load_settings(
            upstreams=upstreams, routing={"default": "scripted"}, repair_log={"url": "memory://"}
        )
        app = create_app(settings)
        assert app.state.proxy.tracing is not None
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}
        with running(app, timeout_graceful_shutdown=1) as proxy, httpx.Client() as http:
            slowest = 0.0
            for _ in range(10):
                began = time.perf_counter()
                answer = http.post(proxy + "/v1/chat/completions", json=body, timeout=5)
                slowest = max(slowest, time.perf_counter() - began)
                assert answer.status_code == 200
    assert slowest < 1.0  # the exporter's timeout is paid by its thread, never here


def test_a_full_queue_drops_a_requests_spans_and_never_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request's spans go straight into the batch processor's queue: past its size they
    are dropped there, while the exporter is stuck, and the request does not wait."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.trace import SpanKind

    from proxy.telemetry.otel import Tracing
    from proxy.telemetry.record import Finished, Pending

    class Stuck(SpanExporter):
        def __init__(self) -> None:
            self.release = threading.Event()

        def export(self, spans: object) -> SpanExportResult:
            self.release.wait(5)
            return SpanExportResult.SUCCESS

    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "3")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "1")
    exporter = Stuck()
    tracing = Tracing(load_settings(repair_log={"url": "memory://"}), exporter, environ={})
    queue = tracing.processor._batch_processor._queue
    try:
        began = time.perf_counter()
        for n in range(50):
            span = Pending(f"r{n}", SpanKind.SERVER, 7, 0, {}, sampled=True)
            span.end = span.start + 1
            tracing.emit(Finished([span]))
        assert time.perf_counter() - began < 0.5
        assert 1 <= len(queue) <= 3  # the rest dropped (one may be in the stuck export)
    finally:
        exporter.release.set()
        tracing.shutdown()
