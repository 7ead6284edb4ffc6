"""The Vercel AI SDK's Anthropic provider (``ai`` with ``@ai-sdk/anthropic``) pointed at the
proxy's Messages API, on the five Messages providers.

One Node process runs every scenario on every model (node/ai_sdk_anthropic.mjs): the SDK's own
tool loop, plain and streamed, its history built from its own parts (tool results as the SDK
converts them, DeepSeek's unsigned thinking kept): clean, byte for byte. Each request carries
an ``x-scenario`` header, so each test picks its own exchanges out of the session's tap. The
packages are installed once into tests/.node/ai-sdk-anthropic/ (git-ignored) by tests/node.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.messages_guard import MESSAGES_MODELS, MessagesGuard
from tests.node import node_with

NODE_DIR = Path(__file__).parent.parent / ".node" / "ai-sdk-anthropic"
SCRIPT = Path(__file__).parent / "node" / "ai_sdk_anthropic.mjs"
#: Majors that run on Node 20 and go together (ai 6 with @ai-sdk/anthropic 3).
PACKAGES = ("ai@^6", "@ai-sdk/anthropic@^3")
MODELS = tuple(MESSAGES_MODELS)


@pytest.fixture(scope="module")
def runs(session_messages_guard: MessagesGuard) -> tuple[MessagesGuard, dict[str, Any]]:
    """Run every scenario once; the session's tap as it was after, and the script's results."""
    installed = NODE_DIR / "node_modules" / "@ai-sdk" / "anthropic"
    node = node_with(NODE_DIR, PACKAGES, installed, what="the AI SDK Anthropic tests")
    session_messages_guard.reset()
    script = NODE_DIR / "ai_sdk_anthropic.mjs"  # beside its node_modules, where imports resolve
    script.write_text(SCRIPT.read_text())
    env = {**os.environ, "PROXY_ROOT": session_messages_guard.url, "MODELS": ",".join(MODELS)}
    done = subprocess.run(
        [node, str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return session_messages_guard.scenario(), json.loads(done.stdout)


@pytest.mark.parametrize("model", MODELS, ids=MODELS)
@pytest.mark.parametrize("name", ["loop", "stream"])
def test_tool_loop(runs: tuple[MessagesGuard, dict[str, Any]], model: str, name: str) -> None:
    guard, results = runs
    result = results[f"{model}/{name}"]
    assert result["ok"], result
    assert result["text"] == "The tool returned: config.py: x = 1"
    scenario = guard.scenario(f"{model}/{name}")
    scenario.assert_clean(model, 2)
