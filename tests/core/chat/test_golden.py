"""Golden cases: every file in tests/cases/ is a list of cases run through the engine.

A case: {"id", "policy" (a preset name), "overrides" (optional {rule: action-or-table}),
"request" (optional: the rest of the request body, e.g. {"model": "deepseek-reasoner"}, read
by the model-dependent rules), "input" (messages), "findings" ([{"rule", "action", "path"}], in
order), "output" (the expected messages, or null when the outcome is a rejection),
"request_output" (optional: the rest of the request as forwarded, when a request-level rule
changed it). A case whose output and request equal its input must come out as the very same
list (no finding, nothing changed).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from proxy.core.forward import forwarded_body
from proxy.core.policy import build_policy
from proxy.core.wire import CHAT
from proxy.emulator import PROVIDERS, validate
from tests.factories import sanitize_chat

CASES_DIR = Path(__file__).parents[2] / "cases"


def _load() -> list[Any]:
    params = []
    for file in sorted(CASES_DIR.glob("*.json")):
        for case in json.loads(file.read_text()):
            params.append(pytest.param(case, id=f"{file.stem}:{case['id']}"))
    return params


@pytest.mark.parametrize("case", _load())
def test_golden(case: dict[str, Any]) -> None:
    policy = build_policy(case["policy"], overrides=case.get("overrides"))
    original = copy.deepcopy(case["input"])
    request = {**case.get("request", {}), "messages": case["input"]}
    outcome = sanitize_chat(case["input"], policy, request=request)
    got = [{"rule": f.rule, "action": f.action, "path": f.path} for f in outcome.findings]
    assert got == case["findings"]
    assert case["input"] == original, "the engine mutated its input"
    if case["output"] is None:
        assert outcome.rejected
    else:
        assert not outcome.rejected
        assert outcome.messages == case["output"]
        forwarded = forwarded_body(CHAT, request, outcome)
        assert _rest(forwarded) == case.get("request_output", _rest(request))
        if case["output"] == original and "request_output" not in case:
            assert outcome.messages is case["input"]
            assert not outcome.changed
        if all(f["action"] != "warn" for f in got):
            request = {**forwarded, "messages": outcome.messages}
            again = sanitize_chat(outcome.messages, policy, request=request)
            assert again.findings == (), "sanitizing twice must find nothing the second time"


def _rest(request: Any) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != "messages"}


@pytest.mark.parametrize(
    "case", [c for c in _load() if "request" in c.values[0] and c.values[0]["policy"] in PROVIDERS]
)
def test_golden_outputs_are_accepted_by_the_presets_emulator(case: dict[str, Any]) -> None:
    """A case that names its request is judged by its preset's emulator: the valid form as it
    is, the broken form once repaired."""
    if case["output"] is None:
        return
    body = {**case.get("request_output", case["request"]), "messages": case["output"]}
    rejection = validate(case["policy"], body)
    assert rejection is None, (rejection.rule, rejection.message)


def test_every_rule_has_golden_cases() -> None:
    from proxy.core.chat.rules import RULES

    covered = set()
    for file in CASES_DIR.glob("*.json"):
        for case in json.loads(file.read_text()):
            covered.update(f["rule"] for f in case["findings"])
    assert set(RULES) <= covered, f"rules without golden cases: {sorted(set(RULES) - covered)}"
