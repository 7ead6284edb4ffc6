"""`toolcall-guard check` on Anthropic Messages bodies: recognised by their shape, or named with
``--api`` when the file could be chat too (issue 21 §6); the row's rules and paths apply."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

EMPTY_TEXT: list[dict[str, Any]] = [
    {"role": "user", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "Hi"}]},
]


def _check(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "proxy", "check", str(path), "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,  # the exit status is what the tests read
    )


def _file(tmp_path: Path, body: Any) -> Path:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    return path


def test_a_messages_body_is_recognised_and_checked_with_its_rules(tmp_path: Path) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "system": "Be brief.",
            "messages": EMPTY_TEXT}  # fmt: skip
    done = _check(_file(tmp_path, body), "--upstream", "anthropic", "--fix")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [f["rule"] for f in report["findings"]] == ["messages_empty_text"]
    assert report["findings"][0]["path"].startswith("messages[0].content[0]")
    assert report["fixed"]["messages"][0]["content"] == [{"type": "text", "text": "Hi"}]
    assert report["fixed"]["system"] == "Be brief."


def test_an_ambiguous_body_reads_as_chat_unless_api_names_messages(tmp_path: Path) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": EMPTY_TEXT}
    path = _file(tmp_path, body)
    as_chat = json.loads(_check(path, "--upstream", "anthropic").stdout)
    assert not any(f["rule"].startswith("messages_") for f in as_chat["findings"])
    as_messages = _check(path, "--upstream", "anthropic", "--api", "messages")
    assert [f["rule"] for f in json.loads(as_messages.stdout)["findings"]] == [
        "messages_empty_text"
    ]


def test_an_unknown_api_or_a_body_of_two_apis_is_unreadable(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    done = _check(_file(tmp_path, body), "--api", "soap")
    assert done.returncode == 3
    assert "unknown --api 'soap'; allowed: chat, responses, messages" in done.stderr
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}
    mixed = {"model": "m", "messages": [{"role": "tool", "content": [result]}]}  # both signs
    done = _check(_file(tmp_path, mixed))
    assert done.returncode == 3
    assert "could be any of chat, messages; name one with --api" in done.stderr
