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
from proxy.core.chat.rules.binding import analyse
from proxy.core.chat.rules.blocks import well_paired
from proxy.core.policy import build_policy
from tests import factories
from tests.core.chat.test_seeds import assert_well_paired
from tests.factories import sanitize_chat

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
    outcome = sanitize_chat(messages, policy)
    assert messages == snapshot
    if not outcome.rejected:
        assert sanitize_chat(outcome.messages, policy).findings == ()


@settings(max_examples=300, deadline=None)
@given(messages=histories(valid=True), data=st.data())
def test_every_repair_mix_leaves_a_well_paired_history(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    outcome = sanitize_chat(messages, build_policy("passthrough", overrides=_repairing(data)))
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


def _reference_calls(messages: list[dict[str, Any]]) -> tuple[Any, Any, set[int]]:
    calls: dict[str, list[tuple[int, int]]] = {}
    capacity: dict[tuple[int, str], int] = {}
    openers = set()
    for c, message in enumerate(messages):
        made = message.get("tool_calls")
        if message["role"] != "assistant" or type(made) is not list or not made:
            continue
        openers.add(c)
        for j, call in enumerate(made):
            cid = call.get("id") if type(call) is dict else None
            if type(cid) is str and cid:
                calls.setdefault(cid, []).append((c, j))
                capacity[(c, cid)] = capacity.get((c, cid), 0) + 1
    return calls, capacity, openers


def _reference_pairing(history: History) -> dict[str, Any]:
    """The binding as the one loop over every call and every tool message made it before the
    fast paths (issue 23): the specification :func:`binding.analyse` must keep."""
    messages = history.messages
    calls, capacity, openers = _reference_calls(messages)
    results: dict[tuple[int, str], list[int]] = {}
    answered: dict[tuple[int, str], int] = {}
    misplaced, orphans, elsewhere = [], [], []
    block = None
    for t, message in enumerate(messages):
        if message["role"] != "tool":
            continue
        if t == 0 or messages[t - 1]["role"] != "tool":
            block = t - 1 if t - 1 in openers else None
        rid = message.get("tool_call_id")
        if type(rid) is not str or not rid:
            rid = None
        elif block is not None and (block, rid) in capacity:
            results.setdefault((block, rid), []).append(t)
            answered[(block, rid)] = answered.get((block, rid), 0) + 1
            continue
        elsewhere.append((t, rid))
    for t, rid in elsewhere:
        sites = calls.get(rid) if rid is not None else None
        if sites is None:
            orphans.append(t)
            continue
        before = [s for s in sites if s[0] < t]
        key = (before[-1][0] if before else sites[0][0], rid)
        answers = results.get(key, [])
        full = answered.get(key, 0) >= capacity[key]
        content = messages[t].get("content")
        if full and all(messages[a].get("content") != content for a in answers):
            orphans.append(t)
            continue
        misplaced.append((t, key[0]))
        results.setdefault(key, []).append(t)
    return {
        "capacity": capacity,
        "results": [(k, sorted(v)) for k, v in results.items()],
        "answered": answered,
        "misplaced": misplaced,
        "orphans": orphans,
    }


@settings(max_examples=400, deadline=None)
@given(
    messages=st.one_of(
        histories(valid=True), histories(valid=False), factories.broken_histories("openai")
    )
)
def test_the_analysis_binds_as_the_plain_loop(messages: list[dict[str, Any]]) -> None:
    found = analyse(History(messages))
    got = {
        "capacity": found.capacity,
        "results": list(found.results.items()),
        "answered": found.answered,
        "misplaced": found.misplaced,
        "orphans": found.orphans,
    }
    assert got == _reference_pairing(History(messages))


def test_the_analysis_binds_at_spots_in_c_and_the_rest_by_the_loop() -> None:
    """Seed 000 at the start of a long history: every call answered at its spot, one orphan."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": ""},  # its tool_calls were lost
        {"role": "tool", "tool_call_id": "call_lost", "content": "8080"},
    ]
    for n in range(5):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": ""}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": "r"},
        ]
    messages.append({"role": "tool", "tool_call_id": "call_4", "content": "again"})
    found = analyse(History(messages))
    assert found.owner is not None  # the C-built maps, not the per-call loop's
    assert found.orphans == [2]
    assert found.results[(11, "call_4")] == [12, 13]  # the spot, then the extra in its run
    assert found.answered[(11, "call_4")] == 2
    assert found.results == dict(_reference_pairing(History(messages))["results"])


@st.composite
def answered_at_spots(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A well-paired history with a few tool messages added anywhere: repeats of a result (in
    its block or elsewhere, saying the same or something else) and results of no call."""
    messages = draw(factories.histories())
    named = [m["tool_call_id"] for m in messages if m["role"] == "tool"] or ["call_x"]
    for _ in range(draw(st.integers(1, 3))):
        rid = draw(st.one_of(st.sampled_from(named), st.just("call_lost"), odd))
        content = draw(st.sampled_from(["again", "", None]))
        at = draw(st.integers(0, len(messages)))
        messages.insert(at, {"role": "tool", "tool_call_id": rid, "content": content})
    return messages


@settings(max_examples=400, deadline=None)
@given(
    messages=st.one_of(
        answered_at_spots(), histories(valid=True), factories.broken_histories("openai")
    )
)
def test_a_pairing_at_spots_finds_what_its_full_maps_do(messages: list[dict[str, Any]]) -> None:
    """The pairing that keeps only the calls the stray results bind to (issue 34) gives the
    rules what the full maps give them: the same hits, and the same crowded calls."""
    lean, full = History(messages), History(copy.deepcopy(messages))
    analyse(full)._full()  # every call in the maps, as a history not answered at spots has
    found = analyse(lean)
    crowded = dict(found.crowded())
    assert {key: found.capacity_of(key) for key in crowded} == {
        key: found.capacity[key] for key in crowded
    }
    assert crowded == {key: where for key, where in found.results.items() if len(where) > 1}
    for rule in pairing.RULES:
        assert rule.detect(History(messages), {}) == rule.detect(full, {}), rule.name


def test_the_stray_results_of_a_long_history_leave_most_calls_out_of_the_maps() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(4):
        call = {"id": f"call_{n}", "type": "function", "function": {"name": "f", "arguments": ""}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": "r"},
        ]
    messages.insert(3, {"role": "tool", "tool_call_id": "call_3", "content": "r"})  # misplaced
    found = analyse(History(messages))
    assert found.at_spots
    assert found._results == {(8, "call_3"): [3, 9]}  # the one call a stray result names
    assert found.misplaced == [(3, 8)]
    assert found.results[(1, "call_0")] == [2]  # the others, built when read
    assert not found.at_spots


@settings(max_examples=300, deadline=None)
@given(
    messages=st.one_of(
        histories(valid=True), histories(valid=False), factories.broken_histories("openai")
    )
)
def test_the_empty_assistant_messages_are_those_a_scan_of_every_message_finds(
    messages: list[dict[str, Any]],
) -> None:
    """The detector looks only at the odd messages that are not sure to make calls."""

    def empty(message: dict[str, Any]) -> bool:
        calls = bool(message.get("tool_calls")) or message.get("function_call") is not None
        content = message.get("content")
        return message["role"] == "assistant" and not calls and content in (None, "", [])

    hits = sequence.empty_assistant_message.detect(History(messages), {})
    assert [hit.index for hit in hits] == [i for i, m in enumerate(messages) if empty(m)]
