"""Node's Vercel AI SDK (``ai`` with ``@ai-sdk/openai-compatible``) pointed at the proxy.

One Node process runs every scenario on every model (node/ai_sdk.mjs); each request carries an
``x-scenario`` header, so each test picks its own exchanges out of the session's tap. The
packages are installed once into tests/.node/ai-sdk/ (git-ignored) from the npm registry.
Without node/npm the tests are skipped with the reason, except under CI=true.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import MODELS, Guard, parametrize_models
from tests.node import node_with

NODE_DIR = Path(__file__).parent.parent / ".node" / "ai-sdk"
SCRIPT = Path(__file__).parent / "node" / "ai_sdk.mjs"
#: Majors that run on Node 20 (ai 7 needs a newer Node); the SDK's message conversion is
#: what these tests exercise, so a major change should be a deliberate update here.
PACKAGES = ("ai@^6", "@ai-sdk/openai-compatible@^2")
#: Where the SDK's own messages break the provider's rules, so the proxy must repair: a
#: tool-call message is sent with ``content: null``, which Gemini rejects (provider-rules.md G9).
REPLAYED = {"gemini-2.5-flash": "repaired", "gemini-3-pro-preview": "repaired"}


def _node() -> str:
    installed = NODE_DIR / "node_modules" / "@ai-sdk" / "openai-compatible"
    return node_with(NODE_DIR, PACKAGES, installed, what="the AI SDK tests")


@pytest.fixture(scope="module")
def runs(session_guard: Guard) -> tuple[Guard, dict[str, Any]]:
    """Run every scenario once; the session's tap as it was after, and the script's results."""
    node = _node()
    session_guard.reset()
    script = NODE_DIR / "ai_sdk.mjs"  # beside its node_modules, where imports resolve
    script.write_text(SCRIPT.read_text())
    env = {**os.environ, "PROXY_V1": session_guard.v1, "MODELS": ",".join(MODELS)}
    done = subprocess.run(
        [node, str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return session_guard.scenario(), json.loads(done.stdout)


def _scenario(runs: tuple[Guard, dict[str, Any]], model: str, name: str) -> Guard:
    guard, results = runs
    result = results[f"{model}/{name}"]
    assert result["ok"], result
    return guard.scenario(f"{model}/{name}")


@parametrize_models()
def test_tool_loop(runs: tuple[Guard, dict[str, Any]], model: str) -> None:
    guard = _scenario(runs, model, "loop")
    guard.assert_outcomes(model, ["clean", REPLAYED.get(model, "clean")])


@parametrize_models()
def test_streamed_tool_loop(runs: tuple[Guard, dict[str, Any]], model: str) -> None:
    guard = _scenario(runs, model, "stream")
    guard.assert_outcomes(model, ["clean", REPLAYED.get(model, "clean")])


@parametrize_models()
def test_parallel_round(runs: tuple[Guard, dict[str, Any]], model: str) -> None:
    guard = _scenario(runs, model, "parallel")
    guard.assert_outcomes(model, [REPLAYED.get(model, "clean")])


@parametrize_models()
def test_lost_tool_calls_are_repaired(runs: tuple[Guard, dict[str, Any]], model: str) -> None:
    _scenario(runs, model, "lost").assert_repaired(model)


@parametrize_models()
def test_trimmed_history_is_repaired(runs: tuple[Guard, dict[str, Any]], model: str) -> None:
    _scenario(runs, model, "trimmed").assert_repaired(model)


@parametrize_models()
def test_missing_result_is_refused_by_the_sdk(
    runs: tuple[Guard, dict[str, Any]], model: str
) -> None:
    """The SDK checks results itself (MissingToolResultsError): nothing reaches the proxy."""
    guard, results = runs
    assert results[f"{model}/missing"]["error"] == "AI_MissingToolResultsError"
    assert not guard.scenario(f"{model}/missing").chats()
