"""The example agent of docker-compose.yml and the Kubernetes manifests, run as those run it
(a plain ``python example_agent.py``, standard library only) against the proxy in front of the
strict OpenAI emulator: the set-up ``docker compose up`` starts with no key and no network."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from proxy.app import create_app
from proxy.emulator import create_emulator_app
from proxy.settings import load_settings
from tests.servers import running

AGENT = Path(__file__).parent.parent.parent / "deploy" / "example_agent.py"


@pytest.fixture(scope="module")
def guarded_emulator() -> Iterator[str]:
    """The proxy's /v1 URL, its `openai` upstream being the emulator (as in the compose file)."""
    with running(create_emulator_app("openai")) as emulator:
        upstreams = {"openai": {"base_url": emulator + "/v1", "models": ["gpt-*"]}}
        settings = load_settings(upstreams=upstreams, repair_log={"url": "memory://"})
        with running(create_app(settings)) as proxy:
            yield proxy + "/v1"


def run_agent(base_url: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "injected-by-the-proxy",
    }
    return subprocess.run(
        [sys.executable, "-I", str(AGENT)],  # -I: no site-packages, as in python:3.11-slim
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )


def test_the_example_agent_is_repaired_and_answered(guarded_emulator: str) -> None:
    result = run_agent(guarded_emulator)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "HTTP 200"
    assert "x-toolcall-guard-outcome: repaired" in lines
    assert any(line.startswith("x-toolcall-guard-rules: orphan_tool_result=1") for line in lines)
    assert any(line.startswith("x-toolcall-guard-record: ") for line in lines)


def test_without_the_proxy_the_emulator_refuses_the_same_history() -> None:
    # The history really is broken: sent straight to the emulator, it is a 400.
    with running(create_emulator_app("openai")) as emulator:
        result = run_agent(emulator + "/v1")
    assert result.returncode == 1
    assert result.stdout.startswith("HTTP 400")
    assert "must be a response to a preceeding message with 'tool_calls'" in result.stdout


def test_the_agent_asks_each_replica_in_turn(guarded_emulator: str) -> None:
    # docker compose --profile postgres: one agent, both replicas sharing the PostgreSQL log.
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AGENT_PROXIES": f"{guarded_emulator},{guarded_emulator.replace('127.0.0.1', 'localhost')}",
        "OPENAI_API_KEY": "injected-by-the-proxy",
    }
    result = subprocess.run(
        [sys.executable, "-I", str(AGENT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    answered = [line for line in result.stdout.splitlines() if line.startswith("HTTP 200 from ")]
    assert answered == [
        f"HTTP 200 from {guarded_emulator}",
        f"HTTP 200 from {guarded_emulator.replace('127.0.0.1', 'localhost')}",
    ]
    assert result.stdout.count("x-toolcall-guard-outcome: repaired") == 2
