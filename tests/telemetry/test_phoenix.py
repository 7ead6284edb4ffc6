"""Against a real trace back-end: Arize Phoenix (``phoenix serve``), started on free loopback
ports, receives the proxy's OTLP spans; they are read back through its REST API.

Phoenix is not in the ``dev`` extra: it pins ``anthropic<2`` (the client tests drive 2.x) and
its client package registers a pytest plugin that fails every run under
``filterwarnings = error``. Install it in a venv of its own and name its executable in
``PHOENIX_BIN`` (else ``phoenix`` on the PATH or beside this interpreter is used). Without it
the test is skipped with the reason, except under ``CI=true``, where it fails. Marked slow:
Phoenix takes about 30 s to start on a busy 2-core machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from proxy.app import create_app
from proxy.emulator import create_emulator_app
from proxy.settings import load_settings
from tests.servers import running
from tests.telemetry.conftest import Scripted

pytestmark = pytest.mark.slow
START_TIMEOUT = 180.0
USER = {"role": "user", "content": "Read a.txt"}


def _phoenix() -> str:
    found = os.environ.get("PHOENIX_BIN") or shutil.which("phoenix")
    beside = Path(sys.executable).parent / "phoenix"
    if found is None and beside.exists():
        found = str(beside)
    if found is None:
        reason = "arize-phoenix is not installed (set PHOENIX_BIN to its `phoenix`)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true requires it")
        pytest.skip(reason)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def phoenix(tmp_path: Path) -> Iterator[str]:
    """A Phoenix server of this test's own (its database in ``tmp_path``); its URL."""
    command = [_phoenix(), "serve"]  # skips (or fails under CI) before anything starts
    port = _free_port()
    env = os.environ | {
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_WORKING_DIR": str(tmp_path),
    }
    log = (tmp_path / "phoenix.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _healthy(url):
            assert server.poll() is None, (tmp_path / "phoenix.log").read_text()[-2000:]
            assert time.monotonic() < deadline, f"phoenix did not start in {START_TIMEOUT} s"
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)
        log.close()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _spans(url: str, trace_ids: set[str], count: int) -> list[dict[str, Any]]:
    """The spans of ``trace_ids`` Phoenix holds, once there are ``count`` (bounded wait)."""
    deadline = time.monotonic() + 30
    while True:
        answer = httpx.get(url + "/v1/projects/default/spans", params={"limit": 100}, timeout=5)
        found = []
        if answer.status_code == 200:
            found = [s for s in answer.json()["data"] if s["context"]["trace_id"] in trace_ids]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_phoenix_shows_the_repaired_and_the_retried_request(
    phoenix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", phoenix + "/v1/traces")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "toolcall-guard-test")
    with running(Scripted()) as scripted, running(create_emulator_app("deepseek")) as deepseek:
        upstreams = {
            "scripted": {"base_url": scripted + "/v1", "models": ["gpt-*"], "policy": "openai"},
            "deepseek": {
                "base_url": deepseek + "/v1",
                "models": ["deepseek-*"],
                "policy": "openai",
            },
        }
        settings = load_settings(
            upstreams=upstreams, routing={"default": "scripted"}, repair_log={"url": "memory://"}
        )
        app = create_app(settings)
        assert app.state.proxy.tracing is not None
        orphan = [USER, {"role": "assistant", "content": ""},
                  {"role": "tool", "tool_call_id": "call_1", "content": "hello"}]  # fmt: skip
        developer = [{"role": "developer", "content": "Be brief."}, USER]
        traces = {"repaired": "1" * 32, "retried": "2" * 32}
        with running(app) as proxy, httpx.Client(timeout=10) as http:
            for kind, model, messages in (
                ("repaired", "gpt-4o", orphan),
                ("retried", "deepseek-chat", developer),
            ):
                sent = {"traceparent": f"00-{traces[kind]}-{'3' * 16}-01"}
                body = {"model": model, "messages": messages}
                answer = http.post(proxy + "/v1/chat/completions", json=body, headers=sent)
                assert answer.status_code == 200, answer.text
    # Leaving the app's lifespan flushed its spans to Phoenix.

    spans = _spans(phoenix, set(traces.values()), 5)

    by_trace: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_trace.setdefault(span["context"]["trace_id"], []).append(span)
    repaired = {s["name"]: s for s in by_trace[traces["repaired"]]}
    server = repaired["POST /v1/chat/completions"]
    assert server["attributes"]["toolcall_guard.outcome"] == "repaired"
    assert [e["attributes"]["toolcall_guard.rule"] for e in server["events"]] == [
        "orphan_tool_result"
    ]
    client = repaired["chat gpt-4o"]
    assert client["parent_id"] == server["context"]["span_id"]
    assert client["attributes"]["gen_ai.usage.input_tokens"] == 11
    assert client["attributes"]["gen_ai.provider.name"] == "openai"
    retried = [s for s in by_trace[traces["retried"]] if s["name"] == "chat deepseek-chat"]
    statuses = sorted(s["attributes"]["http.response.status_code"] for s in retried)
    assert statuses == [200, 400]
