"""The TypeScript SDK (``@anthropic-ai/sdk``) pointed at the proxy's Messages API.

One Node process runs every scenario on every Messages model (node/anthropic_sdk.mjs): a tool
loop and the same loop streamed, the SDK's answer content sent back as it came. Each request
carries an ``x-scenario`` header, so each test picks its own exchanges out of the session's tap.
The package is installed once into tests/.node/anthropic-sdk/ (git-ignored) from the npm
registry. Without node/npm the tests are skipped with the reason, except under CI=true.
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

NODE_DIR = Path(__file__).parent.parent / ".node" / "anthropic-sdk"
SCRIPT = Path(__file__).parent / "node" / "anthropic_sdk.mjs"
#: The major whose request building these tests exercise: a new major is a deliberate update.
PACKAGES = ("@anthropic-ai/sdk@^1",)
MODELS = tuple(MESSAGES_MODELS)


def _node() -> str:
    installed = NODE_DIR / "node_modules" / "@anthropic-ai" / "sdk"
    return node_with(NODE_DIR, PACKAGES, installed, what="the TypeScript SDK tests")


@pytest.fixture(scope="module")
def runs(session_messages_guard: MessagesGuard) -> tuple[MessagesGuard, dict[str, Any]]:
    """Run every scenario once; the session's tap as it was after, and the script's results."""
    node = _node()
    session_messages_guard.reset()
    script = NODE_DIR / "anthropic_sdk.mjs"  # beside its node_modules, where imports resolve
    script.write_text(SCRIPT.read_text())
    env = {**os.environ, "PROXY_ROOT": session_messages_guard.url, "MODELS": ",".join(MODELS)}
    done = subprocess.run(
        [node, str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return session_messages_guard.scenario(), json.loads(done.stdout)


def _scenario(runs: tuple[MessagesGuard, dict[str, Any]], model: str, name: str) -> MessagesGuard:
    guard, results = runs
    result = results[f"{model}/{name}"]
    assert result["ok"], result
    assert result["text"] == "The tool returned: x = 1"
    return guard.scenario(f"{model}/{name}")


@pytest.mark.parametrize("model", MODELS, ids=MODELS)
def test_tool_loop_is_clean(runs: tuple[MessagesGuard, dict[str, Any]], model: str) -> None:
    _scenario(runs, model, "loop").assert_clean(model, 2)


@pytest.mark.parametrize("model", MODELS, ids=MODELS)
def test_streamed_tool_loop_is_clean(
    runs: tuple[MessagesGuard, dict[str, Any]], model: str
) -> None:
    guard = _scenario(runs, model, "stream")
    guard.assert_clean(model, 2)
    guard.assert_relayed(model)
