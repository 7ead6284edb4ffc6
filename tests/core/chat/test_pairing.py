"""Properties of the pairing and sequence rules that golden cases cannot show one by one.

Histories here are drawn from a small alphabet of ids so that calls, results, duplicates and
orphans collide often, with odd values (ids that are numbers, content that is an object) mixed
in: the detectors must stay total, the fast "well paired" verdict must agree with the full
analysis, and a policy repairing with every rule must leave nothing to find.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.core.chat.messages import History
from proxy.core.chat.rules import pairing, sequence
from proxy.core.chat.rules.blocks import well_paired
from proxy.core.policy import apply_policy, build_policy
from tests.core.chat.test_seeds import assert_well_paired

OURS = (*pairing.RULES, *sequence.RULES)
ids = st.sampled_from(["call_a", "call_b", "call_c"])
odd = st.sampled_from([None, "", 7, {"x": 1}, [1]])
contents = st.one_of(
    st.sampled_from(["text", "", None, []]), st.just([{"type": "text", "text": "t"}])
)


@st.composite
def calls(draw: st.DrawFn, valid: bool) -> dict[str, Any]:
    call_id = draw(ids if valid else st.one_of(ids, odd))
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


@st.composite
def message(draw: st.DrawFn, valid: bool) -> dict[str, Any]:
    kind = draw(st.sampled_from(["user", "system", "plain", "caller", "tool", "tool"]))
    if kind == "caller":
        made = draw(st.lists(calls(valid), min_size=1, max_size=3))
        return {"role": "assistant", "content": draw(contents), "tool_calls": made}
    if kind == "tool":
        result: dict[str, Any] = {"role": "tool", "content": draw(st.one_of(contents, odd))}
        if draw(st.booleans()) or valid:
            result["tool_call_id"] = draw(ids if valid else st.one_of(ids, odd))
        if draw(st.booleans()):
            result["name"] = draw(st.sampled_from(["read_file", "", None]))
        return result
    role = "assistant" if kind == "plain" else kind
    return {"role": role, "content": draw(contents)}


def histories(valid: bool) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(message(valid), min_size=1, max_size=10)


def _repairing(choice: st.DataObject) -> dict[str, str]:
    return {r.name: choice.draw(st.sampled_from(list(r.repairs))) for r in OURS}


@settings(max_examples=300, deadline=None)
@given(messages=histories(valid=False), data=st.data())
def test_detectors_are_total_and_repairs_idempotent(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    policy = build_policy("passthrough", overrides=_repairing(data))
    snapshot = copy.deepcopy(messages)
    outcome = apply_policy(messages, policy)
    assert messages == snapshot
    if not outcome.rejected:
        assert apply_policy(outcome.messages, policy).findings == ()


@settings(max_examples=300, deadline=None)
@given(messages=histories(valid=True), data=st.data())
def test_every_repair_mix_leaves_a_well_paired_history(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    outcome = apply_policy(messages, build_policy("passthrough", overrides=_repairing(data)))
    if not outcome.rejected:
        assert outcome.messages
        assert_well_paired(outcome.messages)


@settings(max_examples=300, deadline=None)
@given(messages=histories(valid=True))
def test_fast_verdict_agrees_with_the_detectors(messages: list[dict[str, Any]]) -> None:
    history = History(messages)
    hits = [h for r in pairing.RULES for h in r.detect(History(messages), {"repair": ""})]
    try:
        assert_well_paired(messages)
        valid = True
    except AssertionError:
        valid = False
    assert well_paired(history) is valid
    assert (hits == []) is valid


def test_verdict_is_per_history() -> None:
    clean = [{"role": "user", "content": "hi"}]
    broken = [{"role": "tool", "tool_call_id": "call_a", "content": "x"}]
    for _ in range(2):
        assert well_paired(History(clean))
        assert not well_paired(History(broken))
