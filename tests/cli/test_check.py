"""`toolcall-guard check` as a user runs it: a real subprocess, files and stdin, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proxy.emulator import validate

CLEAN = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Read config.py"},
    {
        "role": "assistant",
        "content": "Reading it.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": "{}"},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "port = 8080"},
    {"role": "user", "content": "Thanks"},
]
# Seed 000: the assistant message was saved without its tool_calls.
LOST_TOOL_CALLS = [
    {"role": "user", "content": "Read config.py"},
    {"role": "assistant", "content": ""},
    {"role": "tool", "tool_call_id": "call_1", "content": "port = 8080"},
    {"role": "user", "content": "And now?"},
]


def _run(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proxy", "check", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def _write(tmp_path: Path, data: Any) -> str:
    file = tmp_path / "history.json"
    file.write_text(json.dumps(data))
    return str(file)


def test_clean_history_exits_0(tmp_path: Path) -> None:
    result = _run(_write(tmp_path, CLEAN), "--upstream", "openai")
    assert result.returncode == 0, result.stderr
    assert "clean" in result.stdout


@pytest.mark.parametrize("upstream", ["openai", "deepseek", "gemini"])
def test_fix_prints_a_body_the_strict_emulator_accepts(tmp_path: Path, upstream: str) -> None:
    model = {"openai": "gpt-4o", "deepseek": "deepseek-chat", "gemini": "gemini-2.5-flash"}[
        upstream
    ]
    body = {"model": model, "messages": LOST_TOOL_CALLS}
    assert validate(upstream, body) is not None, "the broken history must be refused directly"
    result = _run(_write(tmp_path, body), "--upstream", upstream, "--fix")
    assert result.returncode == 1, result.stderr
    fixed = json.loads(result.stdout)
    assert fixed["model"] == model
    assert validate(upstream, fixed) is None
    assert "orphan_tool_result" in result.stderr


def test_bare_messages_array_from_stdin_and_json_report() -> None:
    result = _run(
        "-",
        "--upstream",
        "deepseek",
        "--format",
        "json",
        "--fix",
        stdin=json.dumps(LOST_TOOL_CALLS),
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "repaired"
    assert {f["rule"] for f in report["findings"]} >= {"orphan_tool_result"}
    assert all(f["path"].startswith("messages[") and f["hint"] for f in report["findings"])
    assert type(report["fixed"]) is list


def test_rejected_history_exits_2(tmp_path: Path) -> None:
    broken = [{"role": "user", "content": "hi"}, {"role": "model", "content": "hello"}]
    result = _run(_write(tmp_path, broken), "--upstream", "openai")
    assert result.returncode == 2
    assert "messages[1].role" in result.stdout
    assert "unknown_role" in result.stdout


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not valid JSON"),
        ('{"messages": []}', "must not be empty"),
        ('{"messages": [{"content": "no role"}]}', "messages[0].role"),
        ('"a string"', "JSON object"),
    ],
)
def test_unreadable_input_exits_3_with_one_line(tmp_path: Path, content: str, reason: str) -> None:
    file = tmp_path / "bad.json"
    file.write_text(content)
    result = _run(str(file), "--upstream", "openai")
    assert result.returncode == 3
    assert reason in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_missing_file_and_unknown_upstream_exit_3(tmp_path: Path) -> None:
    missing = _run(str(tmp_path / "nope.json"), "--upstream", "openai")
    assert missing.returncode == 3
    assert "cannot read" in missing.stderr
    unknown = _run(_write(tmp_path, CLEAN), "--upstream", "nowhere")
    assert unknown.returncode == 3
    assert "unknown upstream or policy 'nowhere'" in unknown.stderr


def test_routing_by_model_when_no_upstream_is_named(tmp_path: Path) -> None:
    body = {
        "model": "deepseek-chat",
        "messages": [{"role": "developer", "content": "x"}, {"role": "user", "content": "hi"}],
    }
    result = _run(_write(tmp_path, body), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "upstream deepseek" in result.stdout
    assert "developer_role" in result.stdout
