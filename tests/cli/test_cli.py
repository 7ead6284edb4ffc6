"""The command line as a user meets it: --version, help that says enough, and which policy
`check --upstream NAME` applies (issue 16 items 6 and 7)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from proxy.__main__ import _parser

# Seed 000: the assistant message was saved without its tool_calls.
LOST_TOOL_CALLS = [
    {"role": "user", "content": "Read config.py"},
    {"role": "assistant", "content": ""},
    {"role": "tool", "tool_call_id": "call_1", "content": "port = 8080"},
    {"role": "user", "content": "And now?"},
]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proxy", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def test_version_prints_the_installed_version() -> None:
    result = _run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"toolcall-guard {version('toolcall-guard')}"


def test_check_help_lists_every_exit_code() -> None:
    out = _run("check", "--help").stdout
    codes = out.split("exit codes:", 1)[1]
    for code, meaning in (("0", "clean"), ("1", "repaired"), ("2", "rejected"), ("3", "unread")):
        assert re.search(rf"^\s+{code}\s+.*{meaning}", codes, re.MULTILINE), code


@pytest.mark.parametrize("command", ["emulate", "serve", "check"])
def test_every_flag_has_its_own_help(command: str) -> None:
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    for action in commands.choices[command]._actions:
        assert action.help, f"{command} {action.option_strings or action.dest} has no help"
    assert "--provider" in _run(command, "--help").stdout or command != "emulate"


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "guard.toml"
    path.write_text(text)
    return str(path)


def _history(tmp_path: Path) -> str:
    path = tmp_path / "history.json"
    path.write_text(json.dumps(LOST_TOOL_CALLS))
    return str(path)


OVERRIDE = '[policies.gemini.rules]\norphan_tool_result = "drop"\n'


@pytest.mark.parametrize(
    "extra",
    [
        "",
        '[upstreams.gemini]\nenabled = false\n[upstreams.x]\nbase_url = "http://127.0.0.1:9/v1"\n',
    ],
    ids=["gemini-upstream", "gemini-policy-only"],
)
def test_check_applies_the_policy_table_of_the_name_given(tmp_path: Path, extra: str) -> None:
    config = _config(tmp_path, OVERRIDE + extra)
    result = _run("check", _history(tmp_path), "--upstream", "gemini", "--config", config)
    assert result.returncode == 1, result.stderr
    assert "orphan_tool_result  [drop]" in result.stdout
    assert "policy gemini" in result.stdout


def test_check_names_a_policy_without_an_upstream_of_that_name(tmp_path: Path) -> None:
    config = _config(tmp_path, '[policies.careful]\nbase = "openai"\n')
    result = _run("check", _history(tmp_path), "--upstream", "careful", "--config", config)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("policy careful: repaired")


def test_check_lists_each_allowed_name_once(tmp_path: Path) -> None:
    config = _config(tmp_path, '[policies.careful]\nbase = "openai"\n')
    result = _run("check", _history(tmp_path), "--upstream", "nowhere", "--config", config)
    assert result.returncode == 3
    allowed = result.stderr.strip().split("allowed: ", 1)[1].split(", ")
    assert len(allowed) == len(set(allowed))
    assert {"openai", "deepseek", "gemini", "careful", "strict"} <= set(allowed)
