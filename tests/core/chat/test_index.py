"""The shared fast-path facts (``Index``, ``views.call_facts``, ``well_paired``) against naive
definitions, on valid histories, valid histories with a few random edits, and any shape.

The detectors trust these facts to skip clean histories, so each must say exactly what its
docstring says, whatever the input looks like.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.core.chat.index import CallFacts, Index
from proxy.core.chat.messages import History, Message
from proxy.core.chat.rules import PIPELINE, arguments, views
from proxy.core.chat.rules.blocks import well_paired
from proxy.core.policy import build_policy
from tests.factories import DIALECTS, for_dialect, histories, sanitize_chat

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROLES = ["system", "developer", "user", "assistant", "tool", "function", "model"]
ODD_VALUES: list[Any] = [None, True, 0, 2.5, "", "x", "{", "[]", "{}", " {} ", '{"a": 1}']
ODD_VALUES += ["call_1", "a" * 45, [], {}, [1], {"a": 1}, ["index"], {"type": "text", "text": ""}]
KEYS = ["index", "type", "id", "function", "name", "arguments", "content", "tool_calls"]
KEYS += ["tool_call_id", "reasoning_content", "function_call", "extra_content", "timestamp"]


def _containers(value: Any, out: list[Any]) -> None:
    if type(value) in (dict, list):
        out.append(value)
        for child in value.values() if type(value) is dict else value:
            _containers(child, out)


#: Values worth trying per key (None: drop the key).
AIMED: dict[str, list[Any]] = {
    "id": [None, "", 1, "a" * 45, "call_1"],
    "type": [None, 1, "", "function"],
    "function": [None, "f", [], {"name": "f"}, {"name": "f", "arguments": "{}", "x": 1}],
    "index": [0],
    "extra_content": [{"google": {"thought_signature": "s"}}, 1],
    "name": [None, "", 1, "read_file"],
    "arguments": [None, "", "{", "[]", '{"a": 1}', {"a": 1}, 1],
    "parsed": [1],
    "tool_call_id": [None, "", 1, "call_1"],
}


def _edit(messages: list[Message], rnd: random.Random) -> None:
    """One random edit: anywhere, or aimed at a call, a function, a result or the order."""
    calls = [c for m in messages if type(m.get("tool_calls")) is list for c in m["tool_calls"]]
    calls = [c for c in calls if type(c) is dict]
    functions = [c["function"] for c in calls if type(c.get("function")) is dict]
    results = [m for m in messages if m["role"] == "tool"]
    aim = rnd.randrange(6)
    if aim == 0 and calls:
        _aimed(rnd.choice(calls), ["id", "type", "function", "index", "extra_content"], rnd)
    elif aim == 1 and functions:
        _aimed(rnd.choice(functions), ["name", "arguments", "parsed"], rnd)
    elif aim == 2 and results:
        _aimed(rnd.choice(results), ["tool_call_id"], rnd)
    elif aim == 3 and len(calls) > 1:
        # Give a call (and whatever answers it) the id of another call: a duplicate id.
        call, other = rnd.sample(calls, 2)
        for result in results:
            if result.get("tool_call_id") == call.get("id"):
                result["tool_call_id"] = other.get("id")
        call["id"] = other.get("id")
    elif aim == 4 and len(messages) > 1:
        i = rnd.randrange(len(messages) - 1)
        j = i + 1 if rnd.random() < 0.5 else rnd.randrange(len(messages))
        messages[i], messages[j] = messages[j], messages[i]
    else:
        _edit_anywhere(messages, rnd)


def _aimed(target: dict[str, Any], keys: list[str], rnd: random.Random) -> None:
    key = rnd.choice(keys)
    value = copy.deepcopy(rnd.choice(AIMED[key]))
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value


def _edit_anywhere(messages: list[Message], rnd: random.Random) -> None:
    spots: list[Any] = []
    _containers(messages, spots)
    target = rnd.choice(spots)
    if type(target) is list:
        if target is messages:
            role = rnd.choice(ROLES)
            target.insert(rnd.randrange(len(target) + 1), {"role": role, "content": "x"})
        elif target and rnd.random() < 0.5:
            del target[rnd.randrange(len(target))]
        elif target:
            target[rnd.randrange(len(target))] = copy.deepcopy(rnd.choice(ODD_VALUES))
        return
    key = rnd.choice(list(target) + KEYS)
    if target in messages and key == "role":
        target["role"] = rnd.choice(ROLES)
    elif key in target and rnd.random() < 0.4:
        del target[key]
    else:
        target[key] = copy.deepcopy(rnd.choice(ODD_VALUES))


@st.composite
def near_valid(draw: st.DrawFn) -> list[Message]:
    """A valid history for some dialect, then up to three random edits."""
    messages = for_dialect(draw(histories()), draw(st.sampled_from(DIALECTS)))
    rnd = draw(st.randoms(use_true_random=False))
    for _ in range(draw(st.integers(0, 3))):
        _edit(messages, rnd)
    return messages


# --- naive definitions ---------------------------------------------------------------------


def _naive_regular(messages: list[Message], callers: list[int]) -> bool:
    return all(
        messages[c]["role"] == "assistant" and type(messages[c]["tool_calls"]) is list
        for c in callers
    )


def _good_str(value: Any) -> bool:
    return type(value) is str and value != ""


def _well_formed(call: Any) -> bool:
    if type(call) is not dict or type(call.get("function")) is not dict:
        return False
    function = call["function"]
    return (
        _good_str(call.get("id"))
        and type(call.get("type")) is str
        and _good_str(function.get("name"))
        and "arguments" in function
    )


def _naive_facts(messages: list[Message], callers: list[int]) -> Any:
    if not _naive_regular(messages, callers):
        return None
    sites = [(c + 1 + j, call) for c in callers for j, call in enumerate(messages[c]["tool_calls"])]
    if not all(_well_formed(call) for _, call in sites):
        return None
    return CallFacts(
        ids=[call["id"] for _, call in sites],
        spots=[spot for spot, _ in sites],
        arguments=[call["function"]["arguments"] for _, call in sites],
        string_arguments=all(type(call["function"]["arguments"]) is str for _, call in sites),
        plain=all(len(call) == 3 and len(call["function"]) == 2 for _, call in sites),
    )


def _naive_well_paired(messages: list[Message]) -> bool:
    """Every call has a non-empty string id unique in its message and the tool messages right
    after its message answer that message's calls one to one; no other tool message anywhere
    (an id may come back in a later message)."""
    in_blocks: set[int] = set()
    for i, message in enumerate(messages):
        if message["role"] == "tool" or "tool_calls" not in message:
            continue
        calls = message["tool_calls"]
        if message["role"] != "assistant" or type(calls) is not list or not calls:
            return False
        if not all(type(c) is dict and _good_str(c.get("id")) for c in calls):
            return False
        block = list(range(i + 1, i + 1 + len(calls)))
        if block[-1] >= len(messages) or any(messages[t]["role"] != "tool" for t in block):
            return False
        answers = [messages[t].get("tool_call_id") for t in block]
        if sorted(map(repr, answers)) != sorted(repr(c["id"]) for c in calls):
            return False
        in_blocks.update(block)
        ids = [c["id"] for c in calls]
        if len(set(ids)) != len(ids):
            return False
    tools = {i for i, m in enumerate(messages) if m["role"] == "tool"}
    return tools == in_blocks


def _check_all(messages: list[Message]) -> None:
    history = History(messages)
    index = history.index
    assert index.roles == {m["role"] for m in messages}
    assert index.tools == [i for i, m in enumerate(messages) if m["role"] == "tool"]
    callers = [i for i, m in enumerate(messages) if m["role"] != "tool" and "tool_calls" in m]
    assert index.callers == callers
    odd = [i for i, m in enumerate(messages) if not _good_str(m.get("content"))]
    assert index.odd_content == odd
    keys: dict[str, set[str]] = {}
    for message in messages:
        keys.setdefault(message["role"], set()).update(message)
    assert index.keys == keys
    assert list(index.tool_messages) == [messages[i] for i in index.tools]
    assert list(index.caller_messages) == [messages[i] for i in callers]
    assert index.call_lists == [messages[c]["tool_calls"] for c in callers]
    assert index.assistant_callers == all(messages[c]["role"] == "assistant" for c in callers)
    regular = _naive_regular(messages, callers)
    assert index.regular == regular
    _check_pieced(index)
    flat = [call for c in callers for call in messages[c]["tool_calls"]] if regular else None
    assert index.calls == flat
    assert views.call_facts(history) == _naive_facts(messages, callers)
    assert well_paired(history) == _naive_well_paired(messages)


def _check_pieced(index: Index) -> None:
    """An index pieced together from the pass's parts (as an edit makes one) computes the
    views the pass learnt on the way, and finds what the pass did."""
    positions = {"tool": index.tools, **index.positions}
    pieced = Index.of_parts(index.messages, positions, index.callers, index.odd_content)
    assert pieced.call_lists == index.call_lists
    assert pieced.assistant_callers == index.assistant_callers
    assert pieced.regular == index.regular


@FUZZ
@given(near_valid())
def test_facts_on_valid_histories_with_a_few_edits(messages: list[Message]) -> None:
    _check_all(messages)


@FUZZ
@given(st.data())
def test_facts_on_valid_histories(data: st.DataObject) -> None:
    messages = for_dialect(data.draw(histories()), data.draw(st.sampled_from(DIALECTS)))
    _check_all(messages)
    assert well_paired(History(messages))


json_values = st.recursive(
    st.sampled_from(ODD_VALUES),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=6,
)
any_message = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES)},
    optional={key: json_values for key in KEYS if key != "role"},
)


@FUZZ
@given(st.lists(any_message, min_size=1, max_size=8))
def test_facts_on_any_shape(messages: list[Message]) -> None:
    _check_all(messages)


# --- the argument cache --------------------------------------------------------------------


def _with_arguments(*values: Any) -> list[Message]:
    calls = [
        {"id": f"call_{k}", "type": "function", "function": {"name": "f", "arguments": v}}
        for k, v in enumerate(values)
    ]
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    return [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": calls}, *results]


@pytest.mark.parametrize("broken", ['{"a": 1', "[1, 2]", "", "null", '{"a": 1} x'])
def test_arguments_seen_before_never_hide_broken_ones(broken: str) -> None:
    overrides = {"arguments_invalid_json": "wrap"}
    policy = build_policy("passthrough", dialect="gemini", overrides=overrides)
    valid = '{"path": "a.txt"}'
    assert not sanitize_chat(_with_arguments(valid, valid), policy).findings
    findings = sanitize_chat(_with_arguments(valid, broken), policy).findings
    assert [f.path for f in findings] == ["messages[1].tool_calls[1].function.arguments"]


def test_the_argument_cache_is_bounded_and_keeps_only_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(arguments, "_OBJECTS", set())
    monkeypatch.setattr(arguments, "_REMEMBER_MAX", 8)
    long = '{"text": "' + "x" * arguments._REMEMBER_CHARS + '"}'
    values = [f'{{"n": {n}}}' for n in range(20)]
    assert arguments._known_objects([*values, long])
    assert len(arguments._OBJECTS) <= 8
    assert long not in arguments._OBJECTS
    assert not arguments._known_objects(['{"n": 1}', "[1]"])
    assert "[1]" not in arguments._OBJECTS
    assert not arguments._known_objects([{"n": 1}])  # unhashable: not a string at all


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=6,
)
_TOOL_FREE_KEYS = [k for k in KEYS if k not in ("tool_calls", "tool_call_id", "function_call")]


@st.composite
def tool_free_histories(draw: st.DrawFn) -> list[Message]:
    roles = st.sampled_from([r for r in ROLES if r not in ("tool", "function")])
    message = st.fixed_dictionaries(
        {"role": roles}, optional={k: _JSON for k in _TOOL_FREE_KEYS if k != "role"}
    )
    return draw(st.lists(message, min_size=1, max_size=6))


@FUZZ
@given(messages=tool_free_histories(), dialect=st.sampled_from(DIALECTS))
def test_tools_only_rules_find_nothing_where_no_message_is_about_a_tool(
    messages: list[Message], dialect: str
) -> None:
    """The engine skips ``tools_only`` rules on such histories: their detectors must agree."""
    history = History(messages)
    assert history.tool_free
    every_rule = {r.name: "warn" for r in PIPELINE if r.tools_only}
    policy = build_policy("passthrough", dialect=dialect, overrides=every_rule)
    assert len(policy.active["chat"]) == len(every_rule)
    for rule, setting in policy.active["chat"]:
        if rule.tools_only:
            assert rule.detect(history, setting.params) == [], rule.name
