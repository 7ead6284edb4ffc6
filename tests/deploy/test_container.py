"""The Dockerfile passes hadolint with no findings; docker-compose.yml is a valid Compose file.

No Docker engine runs here, so the image itself is not built; hadolint and
``docker-compose config`` (Debian's docker-compose validates against the Compose schema
without an engine) check what can be checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parent.parent.parent


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is required under CI=true (.ci/run installs it)")
        pytest.skip(f"{name} is not installed")
    return found


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_dockerfile_passes_hadolint_without_findings() -> None:
    result = subprocess.run(
        [_tool("hadolint"), "--no-color", str(ROOT / "Dockerfile")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_dockerfile_runs_as_non_root_with_a_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "\nUSER 10001\n" in text
    assert "HEALTHCHECK" in text
    assert "/healthz" in text
    assert "EXPOSE 8780" in text
    assert text.startswith("#")
    assert "FROM python:3.11-slim" in text


def test_compose_sidecar_and_postgres_profile() -> None:
    services = _compose()["services"]
    agent = services["agent"]
    assert agent["environment"]["OPENAI_BASE_URL"] == "http://toolcall-guard:8780/v1"
    assert agent["depends_on"]["toolcall-guard"]["condition"] == "service_healthy"
    assert "repairs:/data" in services["toolcall-guard"]["volumes"]
    replicas = [
        s for s in services.values() if "postgres" in s.get("profiles", []) and "build" in s
    ]
    assert len(replicas) == 2
    for replica in replicas:
        assert replica["environment"]["TOOLCALL_GUARD_REPAIR_LOG__URL"].startswith("postgresql://")
        assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_compose_file_validates_against_the_compose_schema() -> None:
    env = {**os.environ, "TOOLCALL_GUARD_ADMIN_TOKEN": "test-token"}
    result = subprocess.run(
        [
            _tool("docker-compose"),
            "-f",
            str(ROOT / "docker-compose.yml"),
            "--profile",
            "postgres",
            "config",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
