"""The docs cannot drift: README's rule table is generated from the registry, the set-up
commands are the ones CI runs, and every rule is documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.core.chat.rules import PIPELINE, RULES
from proxy.core.gemini import rules as gemini
from proxy.core.messages import rules as messages
from proxy.core.policy import DIALECTS, build_policy
from proxy.core.rule import Rule

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()


def rule_table(pipeline: tuple[Rule, ...] = PIPELINE, columns: tuple[str, ...] = DIALECTS) -> str:
    """The README's rule table (chat's; Messages' with ``messages.PIPELINE``; Gemini's with
    ``gemini.PIPELINE`` and its three presets); regenerate with
    ``python -c "from tests.test_docs import rule_table; print(rule_table())"``."""
    presets = {name: build_policy(name) for name in columns}  # one column per provider preset
    lines = [
        "| rule | what it catches | repairs (first = default) | " + " | ".join(presets) + " |",
        "|---|---|---|" + "---|" * len(presets),
    ]
    for r in pipeline:
        cells = [presets[p].settings[r.name].action for p in presets]
        repairs = ", ".join(f"`{a}`" for a in r.repairs) or "(reject only)"
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| `{r.name}` | {summary} | {repairs} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _between(text: str, marker: str) -> str:
    start = text.index(f"<!-- {marker}:start -->") + len(f"<!-- {marker}:start -->")
    return text[start : text.index(f"<!-- {marker}:end -->")].strip()


def test_readme_rule_table_matches_the_registry() -> None:
    assert _between(README, "rules") == rule_table()


def test_readme_messages_rule_table_matches_the_registry() -> None:
    assert _between(README, "messages-rules") == rule_table(messages.PIPELINE)


#: The presets of Gemini's native endpoints (its rules differ by their facts only).
GEMINI_PRESETS = ("gemini", "vertex", "code-assist")


def test_readme_gemini_rule_table_matches_the_registry() -> None:
    assert _between(README, "gemini-rules") == rule_table(gemini.PIPELINE, GEMINI_PRESETS)


@pytest.mark.parametrize("name", list(RULES))
def test_every_rule_is_documented(name: str) -> None:
    rule = RULES[name]
    assert len(rule.doc) > 40, "the detector's docstring is the rule's documentation"
    assert rule.hint.endswith("."), "the hint tells the client what to change, in a sentence"


def test_readme_set_up_commands_are_what_ci_runs() -> None:
    setup = _between(
        README.replace("## Set up", "<!-- setup:start -->", 1).replace(
            "## Use it", "<!-- setup:end -->", 1
        ),
        "setup",
    )
    commands = [
        line.split("#")[0].strip() for line in setup.splitlines() if line.startswith("make ")
    ]
    assert commands == ["make run", "make test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\nmake test\n" in ci
