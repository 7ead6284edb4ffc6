"""No open key relay (issue 24, item 6): ``serve`` beyond loopback with a provider key and no
client keys refuses to start, unless ``server.allow_open_relay`` opts in (and says so)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from proxy.errors import ConfigError
from proxy.exposure import check_open_relay
from proxy.server import EXIT_CONFIG, app_factory
from proxy.settings import load_settings
from tests.e2e.conftest import Upstream
from tests.e2e.test_serve import ROOT, Served, _config, env

__all__ = ["env"]  # the fixture, shared with test_serve


@pytest.fixture
def keyed_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider key present in this process's environment."""
    monkeypatch.setenv("TEST_SERVE_KEY", "sk-from-env")


def test_serve_refuses_to_relay_a_key_for_anyone(tmp_path: Path, env: dict[str, str]) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    command = ["serve", "--config", str(config), "--host", "0.0.0.0", "--port", "8999"]
    result = subprocess.run(
        [sys.executable, "-m", "proxy", *command],
        cwd=ROOT,
        env=env,  # TEST_SERVE_KEY set, no client keys
        capture_output=True,
        timeout=30,  # a proxy that started anyway fails here instead of serving on
        check=False,
    )
    err = result.stderr.decode()
    assert result.returncode == EXIT_CONFIG
    assert "open key relay" in err
    for named in ("TEST_SERVE_KEY", "server.client_keys_env", "server.allow_open_relay"):
        assert named in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("server", "client_keys"),
    [({"host": "127.0.0.1"}, ""), ({"host": "0.0.0.0"}, "ck-1,ck-2"), ({"host": "::1"}, "")],
    ids=["loopback", "client-keys", "loopback-v6"],
)
def test_a_proxy_that_knows_its_clients_or_its_machine_starts(
    tmp_path: Path,
    keyed_env: None,
    monkeypatch: pytest.MonkeyPatch,
    server: dict[str, str],
    client_keys: str,
) -> None:
    monkeypatch.setenv("TOOLCALL_GUARD_CLIENT_KEYS", client_keys)
    settings = load_settings(_config(tmp_path, "http://127.0.0.1:9/v1"), server=server)
    assert check_open_relay(settings) is None


def test_without_a_provider_key_the_client_brings_its_own(tmp_path: Path) -> None:
    settings = load_settings(_config(tmp_path, "http://127.0.0.1:9/v1"), server={"host": "0.0.0.0"})
    assert check_open_relay(settings) is None  # TEST_SERVE_KEY unset: nothing to spend


def test_an_opted_in_open_relay_starts_and_says_so(
    tmp_path: Path, keyed_env: None, upstreams: dict[str, Upstream], env: dict[str, str]
) -> None:
    env = env | {"TOOLCALL_GUARD_SERVER__ALLOW_OPEN_RELAY": "true"}
    config = _config(tmp_path, upstreams["openai"].url)
    served = Served(["--config", str(config), "--host", "0.0.0.0"], env)
    try:
        served.wait_healthy()
    finally:
        stderr = served.stop()
    assert "open key relay (server.allow_open_relay = true)" in stderr


def test_the_opt_in_is_refused_nowhere_else(tmp_path: Path, keyed_env: None) -> None:
    settings = load_settings(
        _config(tmp_path, "http://127.0.0.1:9/v1"),
        server={"host": "0.0.0.0", "allow_open_relay": True},
    )
    assert "TEST_SERVE_KEY" in str(check_open_relay(settings))
    with pytest.raises(ConfigError, match="allow_open_relay"):
        check_open_relay(
            settings.model_copy(
                update={"server": settings.server.model_copy(update={"allow_open_relay": False})}
            )
        )


def test_a_worker_built_from_the_environment_refuses_too(
    keyed_env: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``uvicorn proxy.server:app_factory --factory`` skips ``serve``: the factory checks."""
    monkeypatch.setenv("TOOLCALL_GUARD_CONFIG", str(_config(tmp_path, "http://127.0.0.1:9/v1")))
    monkeypatch.setenv("TOOLCALL_GUARD_SERVER__HOST", "0.0.0.0")
    with pytest.raises(ConfigError, match="open key relay"):
        app_factory()
