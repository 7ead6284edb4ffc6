"""`make demo` tells the product's story offline: 400 direct, 200 through the proxy, a record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from proxy.demo import served_base

ROOT = Path(__file__).resolve().parent.parent.parent


def test_demo_shows_the_refusal_the_repair_and_the_record() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "proxy.demo", "--emulate", "--port", "28780"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "strict DeepSeek emulator: HTTP 400" in out
    assert "must be a response to a preceding message with 'tool_calls'" in out
    assert "through toolcall-guard: HTTP 200" in out
    assert "x-toolcall-guard-outcome: repaired" in out
    assert "orphan_tool_result  [salvage]" in out
    assert "/repairs/" in out
    assert ": HTTP 200" in out.split("The record")[1]
    # the closing line points at the port `make run` was given, not the default (issue 37 item 7)
    assert "`make run ARGS='--emulate --port 28780'`" in out
    assert "http://127.0.0.1:28780/ui" in out
    assert ":8780" not in out


def test_the_closing_line_names_the_port_serve_would_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TOOLCALL_GUARD_SERVER__PORT", raising=False)
    monkeypatch.delenv("TOOLCALL_GUARD_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "other.toml"
    config.write_text("[server]\nport = 9123\n")
    assert served_base(["--config", str(config)]) == "http://127.0.0.1:9123"
    assert served_base(["--config", str(config), "--port", "9200", "--workers", "2"]).endswith(
        ":9200"
    )
    monkeypatch.setenv("TOOLCALL_GUARD_SERVER__PORT", "9300")
    assert served_base(["--config", str(config)]) == "http://127.0.0.1:9300"


def test_make_demo_passes_its_args() -> None:
    dry = subprocess.run(
        ["make", "-n", "demo", "ARGS=--emulate --port 28780"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert ".venv/bin/python -m proxy.demo --emulate --port 28780" in dry.stdout.splitlines()
