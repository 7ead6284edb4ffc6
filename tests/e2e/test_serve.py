"""``toolcall-guard serve`` as a process: config file, JSON logs, workers, clean shutdown."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import orjson
import pytest

from tests.e2e.conftest import Upstream

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _config(tmp_path: Path, upstream: str) -> Path:
    path = tmp_path / "guard.toml"
    path.write_text(
        f"""
[server]
log_format = "auto"

[repair_log]
url = "memory://"

[routing]
default = "openai"

[upstreams.openai]
base_url = "{upstream}"
api_key_env = "TEST_SERVE_KEY"
models = ["gpt-*"]
"""
    )
    return path


class Served:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "proxy", "serve", "--port", str(self.port), *args]
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )

    def wait_healthy(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.process.communicate()[1].decode()
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError("the proxy did not become healthy")

    def stop(self) -> str:
        """SIGTERM, and the stderr of a graceful shutdown (uvicorn re-raises the signal once
        it has shut down, so the process ends "killed by SIGTERM" either way)."""
        self.process.send_signal(signal.SIGTERM)
        _, err = self.process.communicate(timeout=20)
        assert self.process.returncode in (0, -signal.SIGTERM)
        stderr = err.decode()
        assert "Finished server process" in stderr
        return stderr


@pytest.fixture
def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLCALL_GUARD_", "PROM"))}
    return clean | {"TEST_SERVE_KEY": "sk-from-env"}


def test_serve_logs_json_lines_and_injects_the_key(
    tmp_path: Path, upstreams: dict[str, Upstream], env: dict[str, str]
) -> None:
    served = Served(["--config", str(_config(tmp_path, upstreams["openai"].url))], env)
    try:
        served.wait_healthy()
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "TOP-SECRET"}]}
        headers = {"authorization": "Bearer sk-client", "x-request-id": "serve-1"}
        response = httpx.post(served.url + "/v1/chat/completions", json=body, headers=headers)
        assert response.status_code == 200
    finally:
        stderr = served.stop()
    assert upstreams["openai"].chats()[0].headers["authorization"] == "Bearer sk-from-env"
    lines = [orjson.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    [request] = [line for line in lines if line.get("request_id") == "serve-1"]
    assert request["status"] == 200
    assert request["logger"] == "toolcall_guard"
    for secret in ("sk-client", "sk-from-env", "TOP-SECRET"):
        assert secret not in stderr


@pytest.mark.slow
def test_serve_with_two_workers_shares_metrics(
    tmp_path: Path, upstreams: dict[str, Upstream], env: dict[str, str]
) -> None:
    served = Served(
        ["--config", str(_config(tmp_path, upstreams["openai"].url)), "--workers", "2"], env
    )
    try:
        served.wait_healthy()
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client() as client:
            for _ in range(6):
                url = served.url + "/v1/chat/completions"
                assert (
                    client.post(url, json=body, headers={"connection": "close"}).status_code == 200
                )
            metrics = client.get(served.url + "/metrics").text
    finally:
        served.stop()
    total = sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("toolcall_guard_requests_total{") and 'status="200"' in line
    )
    assert total == 6


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[server]\nlog_format = "yaml"\n', "server.log_format"),
        ('[repair_log]\nurl = "ftp://somewhere"\n', "repair_log.url"),
    ],
    ids=["bad-value", "bad-log-url"],
)
def test_a_bad_config_stops_serve_with_the_key_named(
    tmp_path: Path, env: dict[str, str], toml: str, key: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    result = subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--config", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert key in result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
