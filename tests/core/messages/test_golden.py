"""Golden cases: every file in tests/cases/messages/ is a list of cases run through
sanitize_body(MESSAGES, …).

A case: {"id", "policy" (a preset name), "overrides" (optional), "request" (the body without
``messages``), "messages", "findings" ([{"rule", "action", "path"}], in order), "output" (the
expected messages, or null when the outcome is a rejection), "fields" (optional: top-level
fields a repair replaced), "removed" (optional: those it removed)}. Every repaired body is
also accepted by the independent strict Messages emulator of the case's provider, and
sanitizing it again finds nothing.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from proxy.core.forward import forwarded_body
from proxy.core.messages.rules import RULES
from proxy.core.policy import DIALECTS, build_policy
from proxy.core.wire import MESSAGES, sanitize_body
from proxy.emulator.messages_validate import validate_messages

CASES_DIR = Path(__file__).parents[2] / "cases" / "messages"
EMULATED = ("anthropic", "deepseek", "kimi", "glm", "minimax")


def _cases() -> list[dict[str, Any]]:
    return [case for f in sorted(CASES_DIR.glob("*.json")) for case in json.loads(f.read_text())]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_golden(case: dict[str, Any]) -> None:
    policy = build_policy(case["policy"], overrides=case.get("overrides"))
    body = {**case["request"], "messages": case["messages"]}
    original = copy.deepcopy(body)
    outcome = sanitize_body(MESSAGES, body, policy)
    got = [{"rule": f.rule, "action": f.action, "path": f.path} for f in outcome.findings]
    assert got == case["findings"]
    assert body == original, "sanitize_body mutated its input"
    if case["output"] is None:
        assert outcome.rejected
        return
    assert not outcome.rejected
    assert outcome.messages == case["output"]
    assert dict(outcome.fields) == case.get("fields", {})
    assert sorted(outcome.removed) == case.get("removed", [])
    if not got:
        assert outcome.messages is body["messages"]
        assert not outcome.changed
    fixed = forwarded_body(MESSAGES, body, outcome)
    again = sanitize_body(MESSAGES, fixed, policy)
    assert again.findings == (), "sanitizing twice must find nothing the second time"
    if case["policy"] in EMULATED and "thread" not in body:  # a thread's held part: not here
        rejection = validate_messages(case["policy"], fixed)
        assert rejection is None, rejection.body


def test_every_rule_has_golden_cases() -> None:
    covered = {f["rule"] for case in _cases() for f in case["findings"]}
    assert set(RULES) <= covered, f"rules without golden cases: {sorted(set(RULES) - covered)}"


def test_every_emulated_provider_has_clean_cases() -> None:
    clean = {case["policy"] for case in _cases() if not case["findings"]}
    assert set(EMULATED) <= clean <= set(DIALECTS)


@pytest.mark.parametrize("name", list(RULES))
def test_every_rule_is_documented(name: str) -> None:
    rule = RULES[name]
    assert rule.api == "messages"
    assert name.startswith("messages_")
    cited = re.search(r"anthropic-messages\.md (?:M\d+|§\d)", rule.doc)
    assert cited, "the docstring cites its evidence row (an M rule or a section)"
    assert rule.hint.endswith(".")
