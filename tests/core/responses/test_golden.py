"""Golden cases: every file in tests/cases/responses/ is a list of cases run through
sanitize_body(RESPONSES, …).

A case: {"id", "policy" (a preset name), "overrides" (optional), "request" (the body without
``input``), "input" (the items), "findings" ([{"rule", "action", "path"}], in order), "output"
(the expected items, or null when the outcome is a rejection)}. Every repaired output is also
accepted by the independent Responses emulator.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from proxy.core.policy import build_policy
from proxy.core.responses.rules import RULES
from proxy.core.wire import RESPONSES, sanitize_body
from proxy.emulator.responses import validate_responses

CASES_DIR = Path(__file__).parents[2] / "cases" / "responses"


def _cases() -> list[dict[str, Any]]:
    return [case for f in sorted(CASES_DIR.glob("*.json")) for case in json.loads(f.read_text())]


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["id"])
def test_golden(case: dict[str, Any]) -> None:
    policy = build_policy(case["policy"], overrides=case.get("overrides"))
    body = {**case["request"], "input": case["input"]}
    original = copy.deepcopy(body)
    outcome = sanitize_body(RESPONSES, body, policy)
    got = [{"rule": f.rule, "action": f.action, "path": f.path} for f in outcome.findings]
    assert got == case["findings"]
    assert body == original, "sanitize_body mutated its input"
    if case["output"] is None:
        assert outcome.rejected
        return
    assert not outcome.rejected
    assert outcome.messages == case["output"]
    if not got:
        assert outcome.messages is body["input"]
        assert not outcome.changed
    fixed = {**body, "input": outcome.messages}
    again = sanitize_body(RESPONSES, fixed, policy)
    assert again.findings == (), "sanitizing twice must find nothing the second time"
    if case["policy"] == "openai":
        assert validate_responses(fixed) is None, validate_responses(fixed)


def test_every_rule_has_golden_cases() -> None:
    covered = {f["rule"] for case in _cases() for f in case["findings"]}
    assert set(RULES) <= covered, f"rules without golden cases: {sorted(set(RULES) - covered)}"


def test_every_rule_has_a_clean_counterpart() -> None:
    clean = [case for case in _cases() if not case["findings"]]
    assert len(clean) >= 8


@pytest.mark.parametrize("name", list(RULES))
def test_every_rule_is_documented(name: str) -> None:
    rule = RULES[name]
    assert rule.api == "responses"
    assert name.startswith("responses_")
    assert "responses-api.md" in rule.doc, "the docstring cites its evidence row"
    assert rule.hint
