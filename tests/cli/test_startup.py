"""Where things are (issue 25 item 4): the first log line names the config file read (or the
paths tried), the repair log (password masked, a relative SQLite path made absolute) and the
upstreams; `serve` started outside the checkout still reads the checkout's config and says so;
`serve --help` names TOOLCALL_GUARD_CONFIG and the environment layer; `--emulate` keeps its
records out of the real log."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import proxy.settings
from proxy.quickstart import DEMO_LOG_URL, emulated
from proxy.settings import load_settings
from proxy.startup import masked_url, startup_line

ROOT = Path(__file__).resolve().parent.parent.parent
CHECKOUT_CONFIG = ROOT / "config" / "toolcall-guard.toml"
START_TIMEOUT = 30.0


def test_a_password_in_the_log_url_is_masked() -> None:
    url = "postgresql://guard:s3cret@db.internal:5432/guard?sslmode=require"
    assert masked_url(url) == "postgresql://guard:***@db.internal:5432/guard?sslmode=require"
    assert masked_url("postgresql://guard@db/guard") == "postgresql://guard@db/guard"
    assert masked_url("memory://") == "memory://"


def test_a_relative_sqlite_path_is_shown_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        masked_url("sqlite:///data/repairs.sqlite3") == f"sqlite:///{tmp_path}/data/repairs.sqlite3"
    )
    assert masked_url("sqlite:////data/repairs.sqlite3") == "sqlite:////data/repairs.sqlite3"


def test_the_line_names_the_config_the_log_and_the_upstreams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "guard.toml"
    config.write_text('[repair_log]\nurl = "postgresql://guard:hunter2@db:5432/guard"\n')
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-not-shown")
    line = startup_line(load_settings(config))
    assert f"config {config}" in line
    assert "repair log postgresql://guard:***@db:5432/guard" in line
    assert "hunter2" not in line
    assert "sk-not-shown" not in line
    assert "deepseek https://api.deepseek.com/v1 (key DEEPSEEK_API_KEY)" in line
    assert "openai https://api.openai.com/v1," in line  # no key set: none named


def test_no_config_found_lists_the_paths_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tried = [tmp_path / "config" / "toolcall-guard.toml", tmp_path / "elsewhere.toml"]
    monkeypatch.setattr(proxy.settings, "config_candidates", lambda: tried)
    monkeypatch.delenv("TOOLCALL_GUARD_CONFIG", raising=False)
    line = startup_line(load_settings())
    assert line.startswith(f"config: none found (tried {tried[0]}, {tried[1]};")


def test_outside_the_checkout_the_checkout_config_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLCALL_GUARD_CONFIG", raising=False)
    assert proxy.settings.config_path() == CHECKOUT_CONFIG
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "toolcall-guard.toml").write_text("")
    assert proxy.settings.config_path() == Path("config/toolcall-guard.toml")  # cwd's first


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_started_elsewhere_says_what_it_reads(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLCALL_GUARD_")}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "proxy", "serve", "--port", str(_free_port())]
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    ) as proc:
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stderr], daemon=True)  # type: ignore[union-attr]
        reader.start()
        try:
            line = ""
            while "starting:" not in line:
                line = lines.get(timeout=START_TIMEOUT)
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    assert f"config {CHECKOUT_CONFIG}" in line
    # the checkout's config names the checkout's data/, wherever serve starts (issue 37 item 9)
    log = f"repair log sqlite:///{ROOT}/data/repairs.sqlite3 (relative to the config file's"
    assert log in line
    assert str(tmp_path) not in line
    assert "upstreams openai https://api.openai.com/v1" in line


def test_a_relative_sqlite_path_in_a_config_file_is_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37 item 9: resolved against the directory of the file that names it, not the
    working directory of serve; a query is kept; the environment's stays the working
    directory's; the start-up line says which."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("TOOLCALL_GUARD_REPAIR_LOG__URL", raising=False)
    (tmp_path / "etc").mkdir()
    config = tmp_path / "etc" / "guard.toml"
    config.write_text('[repair_log]\nurl = "sqlite:///logs/r.sqlite3?mode=rwc"\n')
    settings = load_settings(Path("..") / "etc" / "guard.toml")
    assert settings.repair_log.url == f"sqlite:///{tmp_path}/etc/logs/r.sqlite3?mode=rwc"
    line = startup_line(settings)
    assert (
        f"repair log sqlite:///{tmp_path}/etc/logs/r.sqlite3?mode=rwc (relative to the config"
        in line
    )

    config.write_text('[repair_log]\nurl = "sqlite:////var/lib/r.sqlite3"\n')
    absolute = load_settings(config)
    assert absolute.repair_log.url == "sqlite:////var/lib/r.sqlite3"
    assert "(relative" not in startup_line(absolute)

    monkeypatch.setenv("TOOLCALL_GUARD_REPAIR_LOG__URL", "sqlite:///env/r.sqlite3")
    from_env = load_settings(config)
    assert from_env.repair_log.url == "sqlite:///env/r.sqlite3"
    expected = f"repair log sqlite:///{elsewhere}/env/r.sqlite3 (relative to the working directory)"
    assert expected in startup_line(from_env)


def test_serve_help_names_the_config_variable_and_the_environment_layer() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "proxy", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "TOOLCALL_GUARD_CONFIG" in result.stdout
    assert "TOOLCALL_GUARD_SERVER__PORT" in result.stdout
    assert "nested with __" in result.stdout


def test_emulated_records_stay_out_of_the_real_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLCALL_GUARD_REPAIR_LOG__URL", raising=False)
    settings = load_settings(CHECKOUT_CONFIG)
    urls = {"openai": "http://127.0.0.1:9/v1"}
    assert emulated(settings, CHECKOUT_CONFIG, urls).repair_log.url == DEMO_LOG_URL
    monkeypatch.setenv("TOOLCALL_GUARD_REPAIR_LOG__URL", "sqlite:///kept/demo.sqlite3")
    settings = load_settings(CHECKOUT_CONFIG)
    kept = emulated(settings, CHECKOUT_CONFIG, urls)
    assert kept.repair_log.url == "sqlite:///kept/demo.sqlite3"
