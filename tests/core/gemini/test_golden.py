"""Golden cases: every file in tests/cases/gemini/ is a list of cases run through the engine.

A case: {"id", "policy" (an endpoint: ``gemini``, ``vertex``, ``code-assist``), "model" (the
model of the URL path; none on Code Assist, whose body names it), "overrides" (optional),
"body" (the request body as the client sent it), then either "malformed" (the path a
:class:`MalformedHistory` names: refused whatever the policy) or "findings" ([{"rule",
"action", "path"}], in order) and "output" (the expected history, ``"unchanged"`` for a clean
one, which must come back as the very list the client sent, or null for a rejection).
Every repaired body sanitized again finds nothing, and every clean or repaired body is accepted
by the strict native emulator of its endpoint (:mod:`proxy.emulator.gemini_native_rules`).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from proxy.core.engine import sanitize
from proxy.core.gemini.items import Contents, history_location
from proxy.core.gemini.rules import RULES
from proxy.core.history import MalformedHistory
from proxy.emulator.gemini_native_errors import AISTUDIO
from proxy.emulator.gemini_native_rules import CONTEXT, SKIP, Strictness, mint, validate_native
from tests.core.gemini.policies import ENDPOINTS, gemini_policy

CASES_DIR = Path(__file__).parents[2] / "cases" / "gemini"


def _cases() -> list[dict[str, Any]]:
    return [case for f in sorted(CASES_DIR.glob("*.json")) for case in json.loads(f.read_text())]


def forwarded(body: dict[str, Any], contents: list[Any]) -> dict[str, Any]:
    """``body`` with ``contents`` where its history sits (the wrapper of Code Assist kept)."""
    if history_location(body) == ("contents",):
        return {**body, "contents": contents}
    return {**body, "request": {**body["request"], "contents": contents}}


HISTORIES = [c for c in _cases() if "malformed" not in c]
#: The emulators' strictness the rules answer for (N17 on: the rules wrap responses).
STRICT = Strictness(struct_values=True)


def _minted(value: Any, endpoint: str) -> Any:
    """``value`` with every real signature replaced by one the emulator of ``endpoint`` minted
    (the cases' signatures are made up: the emulator would call them foreign, N8)."""
    if isinstance(value, list):
        return [_minted(v, endpoint) for v in value]
    if not isinstance(value, dict):
        return value
    return {
        k: mint(endpoint, "golden")
        if k in ("thoughtSignature", "thought_signature") and v not in ("", SKIP, CONTEXT)
        else _minted(v, endpoint)
        for k, v in value.items()
    }


def emulated(policy: str, model: str, body: dict[str, Any]) -> Any:
    """What the strict emulator of ``policy``'s endpoint answers ``body`` (None: accepted)."""
    endpoint = AISTUDIO if policy == "gemini" else policy
    model = model or body.get("model", "")
    wrapped = history_location(body) != ("contents",)
    request = _minted(body["request"] if wrapped else body, endpoint)
    rejection = validate_native(endpoint, model, request, STRICT, "request" if wrapped else "")
    return None if rejection is None else rejection.body


@pytest.mark.parametrize("case", HISTORIES, ids=lambda c: c["id"])
def test_golden(case: dict[str, Any]) -> None:
    policy = gemini_policy(case["policy"], case.get("overrides"))
    body = case["body"]
    original = copy.deepcopy(body)
    history = Contents.of(body, case.get("model", ""))
    outcome = sanitize(history, policy, "gemini")
    got = [{"rule": f.rule, "action": f.action, "path": f.path} for f in outcome.findings]
    assert got == case["findings"]
    assert body == original, "the engine mutated its input"
    if case["output"] is None:
        assert outcome.rejected
        return
    assert not outcome.rejected
    assert dict(outcome.fields) == {}
    assert not outcome.removed
    if case["output"] == "unchanged":
        assert outcome.messages is history.messages, "a clean history leaves byte for byte"
        assert not outcome.changed
        assert emulated(case["policy"], case.get("model", ""), body) is None, (
            "a clean history is one the endpoint accepts"
        )
        return
    assert outcome.messages == case["output"]
    assert outcome.changed
    fixed = forwarded(body, outcome.messages)
    again = sanitize(Contents.of(fixed, case.get("model", "")), policy, "gemini")
    assert again.findings == (), "sanitizing twice must find nothing the second time"
    assert emulated(case["policy"], case.get("model", ""), fixed) is None, (
        "the repaired body is one the endpoint accepts"
    )


@pytest.mark.parametrize("case", [c for c in _cases() if "malformed" in c], ids=lambda c: c["id"])
def test_malformed_bodies_are_refused_naming_the_place(case: dict[str, Any]) -> None:
    with pytest.raises(MalformedHistory) as refused:
        Contents.of(case["body"], case.get("model", ""))
    assert refused.value.path == case["malformed"]


def test_every_rule_has_golden_cases() -> None:
    covered = {f["rule"] for case in HISTORIES for f in case["findings"]}
    assert set(RULES) <= covered, f"rules without golden cases: {sorted(set(RULES) - covered)}"


def test_every_endpoint_has_clean_cases() -> None:
    clean = {case["policy"] for case in HISTORIES if not case["findings"]}
    assert set(ENDPOINTS) <= clean


@pytest.mark.parametrize("name", list(RULES))
def test_every_rule_is_documented(name: str) -> None:
    rule = RULES[name]
    assert rule.api == "gemini"
    assert name.startswith("gemini_")
    cited = re.search(r"gemini-native\.md (?:N\d+|§\d)", rule.doc)
    assert cited, "the docstring cites its evidence row (an N rule or a section)"
    assert rule.hint.endswith(".")
