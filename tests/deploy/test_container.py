"""The Dockerfile passes hadolint with no findings; docker-compose.yml is a valid Compose file;
the image installs from a lock file and its build context leaves out what it does not need.

These check the files without an engine; `make docker-test` (deploy/docker-test.sh, run by
.ci/run with Debian's docker.io) builds the image, runs it and sends a broken history through.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tomllib
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
    # The official image by default; `make docker-test` may give one made from Debian's.
    assert "\nARG BASE_IMAGE=python:3.11-slim\n" in text
    froms = re.findall(r"^FROM (.+)$", text, re.MULTILINE)
    assert froms == ["${BASE_IMAGE} AS build", "${BASE_IMAGE}"]


def test_the_runtime_stage_takes_the_environment_not_the_installer() -> None:
    text = (ROOT / "Dockerfile").read_text()
    build, runtime = text.split("\nFROM ${BASE_IMAGE}\n")
    assert "pip uninstall --yes --quiet pip setuptools" in build
    assert "pip" not in runtime.replace("# ", "")  # nothing is installed in the runtime stage
    assert "COPY --from=build /opt/venv /opt/venv" in runtime
    assert "PATH=/opt/venv/bin:$PATH" in runtime


def test_ci_builds_and_runs_the_image() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "docker.io" in ci
    assert "debootstrap" in ci
    assert "dockerd" in ci
    assert "\nmake docker-test\n" in ci
    makefile = (ROOT / "Makefile").read_text()
    assert "deploy/docker-test.sh" in makefile.split("docker-test:", 1)[1].split("\n\n", 1)[0]


def test_healthcheck_reads_the_port_from_the_environment() -> None:
    text = (ROOT / "Dockerfile").read_text()
    check = text[text.index("HEALTHCHECK") :].split("\n\n")[0]
    assert "TOOLCALL_GUARD_SERVER__PORT" in check
    assert "8780" not in check.replace("'8780')", "")  # only as the fallback default


def _requirement_names(specs: list[str]) -> set[str]:
    names = set()
    for spec in specs:
        name = re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0]
        if name != "toolcall-guard":
            names.add(name.lower().replace("_", "-"))
    return names


def test_image_installs_every_dependency_from_the_lock_file() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _requirement_names(
        project["dependencies"]
        + project["optional-dependencies"]["postgres"]
        + project["optional-dependencies"]["otel"]  # tracing: off until an endpoint is set
    )
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    pins = dict(line.split("==", 1) for line in lines if line and not line.startswith((" ", "#")))
    assert all(re.fullmatch(r"[\w.+-]+", v) for v in pins.values()), pins  # exact versions
    assert wanted <= set(pins), wanted - set(pins)
    text = (ROOT / "Dockerfile").read_text()
    assert "COPY requirements.lock" in text
    assert "pip install --no-deps --requirement requirements.lock" in text
    # The project itself goes in without resolving anything the lock did not pin.
    installs = re.findall(r"pip install ([^\n&]*)", text)
    assert all("--no-deps" in flags for flags in installs), installs


def _ignored(patterns: list[str], path: str) -> bool:
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        glob = pattern.lstrip("!")
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        hit = any(
            fnmatch.fnmatch(p, glob) or fnmatch.fnmatch(p, glob.removeprefix("**/"))
            for p in prefixes + parts
        )
        if hit:
            ignored = not negate
    return ignored


def test_dockerignore_keeps_the_context_to_what_the_image_needs() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for heavy in (
        ".venv/bin/python",
        "data/repairs.sqlite3",
        "node_modules/x/index.js",
        "tests/.node/bin/node",
        "tests/artifacts/ui-list.png",
        ".git/HEAD",
        "proxy/__pycache__/app.cpython-311.pyc",
        "toolcall_guard.egg-info/PKG-INFO",
        ".hypothesis/examples/x",
        "bench/results/latest.md",
    ):
        assert _ignored(patterns, heavy), heavy
    copied = re.findall(
        r"^COPY (?!--from)(.+) \S+$", (ROOT / "Dockerfile").read_text(), re.MULTILINE
    )
    for source in " ".join(copied).split():
        assert not _ignored(patterns, source), source
        assert (ROOT / source).exists(), source


def test_compose_runs_the_example_agent_offline_by_default() -> None:
    services = _compose()["services"]
    agent = services["agent"]
    assert agent["environment"]["OPENAI_BASE_URL"] == "http://toolcall-guard:8780/v1"
    assert agent["depends_on"]["toolcall-guard"]["condition"] == "service_healthy"
    assert [*agent["entrypoint"], *agent["command"]] == ["python", "/agent/example_agent.py"]
    assert "./deploy/example_agent.py:/agent/example_agent.py:ro" in agent["volumes"]
    emulator = services["emulator"]
    assert emulator["command"][:3] == ["emulate", "--provider", "openai"]
    assert emulator["command"][3:5] == ["--host", "0.0.0.0"]
    guard_env = services["toolcall-guard"]["environment"]
    assert guard_env["TOOLCALL_GUARD_UPSTREAMS__OPENAI__BASE_URL"] == (
        "${TOOLCALL_GUARD_OPENAI_URL:-http://emulator:8790/v1}"
    )
    assert services["toolcall-guard"]["depends_on"]["emulator"]["condition"] == "service_healthy"
    # No variable is required: `docker compose up` works with an empty environment.
    assert ":?" not in (ROOT / "docker-compose.yml").read_text()


def _proxy(service: dict[str, Any]) -> bool:
    """A proxy replica: it serves (the image's command) with a repair log of its own."""
    return "command" not in service and "TOOLCALL_GUARD_REPAIR_LOG__URL" in service.get(
        "environment", {}
    )


def test_compose_sidecar_and_postgres_profile() -> None:
    services = _compose()["services"]
    assert "repairs:/data" in services["toolcall-guard"]["volumes"]
    replicas = [s for s in services.values() if "postgres" in s.get("profiles", []) and _proxy(s)]
    assert len(replicas) == 2
    for replica in replicas:
        assert replica["environment"]["TOOLCALL_GUARD_REPAIR_LOG__URL"].startswith("postgresql://")
        assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_compose_file_validates_against_the_compose_schema() -> None:
    # Without any key or token set, as on a fresh machine.
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
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


def test_the_postgres_profile_has_an_agent_using_both_replicas() -> None:
    services = _compose()["services"]
    replicas = sorted(
        name for name, s in services.items() if "postgres" in s.get("profiles", []) and _proxy(s)
    )
    (agent,) = [
        s
        for s in services.values()
        if "postgres" in s.get("profiles", []) and "example_agent.py" in str(s.get("command"))
    ]
    proxies = agent["environment"]["AGENT_PROXIES"].split(",")
    assert proxies == [f"http://{name}:8780/v1" for name in replicas]
    for name in replicas:
        assert agent["depends_on"][name]["condition"] == "service_healthy"


def test_with_a_real_key_the_agents_present_a_client_key() -> None:
    # The proxy listens on the compose network: with a provider key it wants client keys.
    services = _compose()["services"]
    guard_env = services["toolcall-guard"]["environment"]
    assert guard_env["TOOLCALL_GUARD_CLIENT_KEYS"] == "${AGENT_CLIENT_KEY:-}"
    assert services["agent"]["environment"]["OPENAI_API_KEY"].startswith("${AGENT_CLIENT_KEY")


def _makefile_image() -> str:
    """The tag `make image` builds: ``toolcall-guard:$(VERSION)``, the version from pyproject."""
    makefile = (ROOT / "Makefile").read_text()
    template = re.search(r"^IMAGE\s+\?=\s+(\S+)$", makefile, re.MULTILINE)
    assert template
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    return template.group(1).replace("$(VERSION)", version)


def test_compose_runs_the_one_image_make_image_builds() -> None:
    """Issue 37 item 8: one tag; every service but PostgreSQL runs it (the example agent too),
    and builds it with the base `make image` would use when BASE_IMAGE says so."""
    tag = _makefile_image()
    assert tag == "toolcall-guard:0.1.0"
    services = _compose()["services"]
    images = {name: s["image"] for name, s in services.items()}
    assert {name for name, image in images.items() if image != tag} == {"postgres"}
    official = re.search(r"^OFFICIAL=(\S+)$", (ROOT / "deploy/base-image.sh").read_text(), re.M)
    assert official
    for name, service in services.items():
        if name != "postgres":
            assert service["build"]["args"]["BASE_IMAGE"] == (
                f"${{BASE_IMAGE:-{official.group(1)}}}"
            ), name
    kubernetes = (ROOT / "deploy/kubernetes/sidecar.yaml").read_text()
    assert f"image: {tag}" in kubernetes


def test_the_readme_says_what_the_first_compose_up_downloads() -> None:
    readme = (ROOT / "README.md").read_text()
    docker = readme.split("\n## Docker\n", 1)[1].split("\n## ", 1)[0]
    first = docker.split("The first `docker compose up`", 1)[1].split("\n\n", 1)[0]
    for named in ("python:3.11-slim", "requirements.lock", "postgres:16-alpine", "make image"):
        assert named in first, named
    assert "BASE_IMAGE=$(deploy/base-image.sh) docker compose up" in first
    assert _makefile_image() in docker
    assert "toolcall-guard:local" not in readme
