"""`make demo` tells the product's story offline: 400 direct, 200 through the proxy, a record."""

from __future__ import annotations

import subprocess
import sys


def test_demo_shows_the_refusal_the_repair_and_the_record() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "proxy.demo"],
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
