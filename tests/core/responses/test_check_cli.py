"""``toolcall-guard check`` on Responses bodies (detected by ``input``), in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[3]


def _check(tmp_path: Path, body: Any, *args: str) -> subprocess.CompletedProcess[str]:
    file = tmp_path / "body.json"
    file.write_text(json.dumps(body))
    command = [sys.executable, "-m", "proxy", "check", str(file), "--upstream", "openai", *args]
    return subprocess.run(
        command, check=False, capture_output=True, text=True, cwd=ROOT, timeout=60
    )


def _body(*items: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-4.1", **fields, "input": list(items)}


USER = {"role": "user", "content": "read a.txt"}
CALL = {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{}"}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "contents"}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (_body(USER, CALL, OUTPUT), 0),
        ({"model": "gpt-4.1", "input": "just text"}, 0),
        (_body(USER, CALL), 1),
        (_body(USER, previous_response_id="resp_1", conversation="conv_1"), 2),
        ({"model": "gpt-4.1", "input": 5}, 3),
    ],
    ids=["clean", "string_input", "repaired", "rejected", "unreadable"],
)
def test_exit_codes(tmp_path: Path, body: Any, code: int) -> None:
    assert _check(tmp_path, body).returncode == code


def test_fix_prints_the_repaired_body(tmp_path: Path) -> None:
    result = _check(tmp_path, _body(USER, CALL), "--fix")
    fixed = json.loads(result.stdout)
    assert fixed["input"][:2] == [USER, CALL]
    assert fixed["input"][2] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "aborted",
    }
    assert "input[1]  responses_missing_output" in result.stderr


def test_json_report_names_paths_into_input(tmp_path: Path) -> None:
    result = _check(tmp_path, _body(USER, OUTPUT), "--format", "json")
    report = json.loads(result.stdout)
    assert report["status"] == "repaired"
    assert [f["path"] for f in report["findings"]] == ["input[1]"]
    assert report["findings"][0]["rule"] == "responses_orphan_output"
