"""Unit tests of proxy/core/chat/rules/calls.py, arguments.py and shape.py beyond the golden cases.

Totality, copy-on-write, ids.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.core.chat.messages import History
from proxy.core.chat.rules import arguments as argument_rules
from proxy.core.chat.rules import calls as call_rules
from proxy.core.chat.rules import shape
from proxy.core.policy import Policy, build_policy
from tests.factories import sanitize_chat

NAMES = [
    "tool_call_shape",
    "arguments_not_string",
    "arguments_invalid_json",
    "empty_tool_calls",
    "content_object",
    "tool_content_shape",
    "content_parts_unsupported",
]
SHAPE_RULES = (*call_rules.RULES, *argument_rules.RULES, *shape.RULES)


def _only_shape(dialect: str, action: str | None = None) -> Policy:
    """Only this module's rules, each on ``action`` (default: its default repair)."""
    overrides = {r.name: action or r.default_repair for r in SHAPE_RULES}
    return build_policy("passthrough", dialect=dialect, overrides=overrides)


def _call(call_id: Any = "call_a", **function: Any) -> dict[str, Any]:
    function = {"name": "read_file", "arguments": "{}", **function}
    return {"id": call_id, "type": "function", "function": function}


def test_rules_are_exported_in_pipeline_order_with_docs_and_default_repairs() -> None:
    assert [r.name for r in SHAPE_RULES] == NAMES
    defaults = [r.default_repair for r in SHAPE_RULES]
    assert defaults == ["fix", "stringify", "wrap", "remove", "wrap", "stringify", "join"]
    assert "empty_object" in argument_rules.arguments_invalid_json.repairs
    for r in SHAPE_RULES:
        assert r.doc, r.name
        assert r.hint, r.name


def test_repairs_copy_only_what_they_change() -> None:
    untouched = {"role": "user", "content": "hi"}
    clean_call = _call("call_a")
    broken_call = {**_call("call_b"), "index": 1}
    messages = [
        untouched,
        {"role": "assistant", "content": None, "tool_calls": [clean_call, broken_call]},
        {"role": "tool", "tool_call_id": "call_a", "content": "a"},
        {"role": "tool", "tool_call_id": "call_b", "content": "b"},
    ]
    snapshot = copy.deepcopy(messages)
    outcome = sanitize_chat(messages, _only_shape("openai"))
    assert messages == snapshot
    assert outcome.messages[0] is untouched
    assert outcome.messages[2] is messages[2]
    assert outcome.messages[1] is not messages[1]
    assert outcome.messages[1]["tool_calls"][0] is clean_call
    assert outcome.messages[1]["tool_calls"][1] == _call("call_b")


def test_minted_ids_are_deterministic_and_distinct_per_position() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [_call(None), _call("")]},
        {"role": "tool", "content": "a"},
        {"role": "tool", "content": "b"},
    ]
    first = sanitize_chat(messages, _only_shape("openai")).messages
    second = sanitize_chat(copy.deepcopy(messages), _only_shape("openai")).messages
    assert first == second
    ids = [c["id"] for c in first[1]["tool_calls"]]
    assert len(set(ids)) == 2
    assert all(i.startswith("call_") and len(i) <= 40 for i in ids)
    assert [m["tool_call_id"] for m in first[2:]] == ids


def test_results_that_name_a_call_are_not_rebound() -> None:
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [_call(None)]},
        {"role": "tool", "tool_call_id": "call_other", "content": "a"},
        {"role": "user", "content": "next"},
        {"role": "tool", "content": "late"},
    ]
    outcome = sanitize_chat(messages, _only_shape("openai"))
    assert outcome.messages[1] is messages[1]
    assert outcome.messages[3] is messages[3]
    assert [f.path for f in outcome.findings] == ["messages[0].tool_calls[0].id"]


def test_fatal_and_fixable_calls_in_one_message() -> None:
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{**_call(), "index": 0}, 7]},
    ]
    rejected = sanitize_chat(messages, _only_shape("openai"))
    assert rejected.rejected
    assert [(f.action, f.path) for f in rejected.findings] == [
        ("fix", "messages[1].tool_calls[0].index"),
        ("reject", "messages[1].tool_calls[1]"),
    ]
    warned = sanitize_chat(messages, _only_shape("openai", "warn"))
    assert not warned.rejected
    assert {f.action for f in warned.findings} == {"warn"}
    assert warned.messages is messages


@pytest.mark.parametrize("policy", ["strict", "observe"])
def test_text_parts_are_no_finding_for_openai_dialect(policy: str) -> None:
    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    messages = [
        {"role": "user", "content": parts},
        {"role": "assistant", "content": None, "tool_calls": [_call()]},
        {"role": "tool", "tool_call_id": "call_a", "content": parts},
    ]
    outcome = sanitize_chat(messages, build_policy(policy))
    assert [f for f in outcome.findings if f.rule in NAMES] == []


def test_arguments_beyond_orjson_limits_still_stringify() -> None:
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [_call(arguments=deep)]},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_b", arguments=2**70)]},
    ]
    policy = build_policy("passthrough", overrides={"arguments_not_string": "stringify"})
    out = sanitize_chat(messages, policy).messages
    assert out[0]["tool_calls"][0]["function"]["arguments"] == "[" * 301 + "]" * 301
    assert out[1]["tool_calls"][0]["function"]["arguments"] == str(2**70)


def test_wrap_keeps_the_original_text() -> None:
    broken = '{"path": "é", "text": "unterminated'
    messages = [{"role": "assistant", "content": "", "tool_calls": [_call(arguments=broken)]}]
    out = sanitize_chat(messages, _only_shape("gemini")).messages
    wrapped = orjson.loads(out[0]["tool_calls"][0]["function"]["arguments"])
    assert wrapped == {"raw_arguments": broken}


def test_clean_history_detectors_find_nothing() -> None:
    messages = [{"role": "user", "content": "go"}]
    for k in range(50):
        calls = [_call(f"call_{k}_{j}", arguments='{"n": 1}') for j in range(3)]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    history = History(messages)
    for dialect in ("openai", "deepseek", "gemini"):
        for r in SHAPE_RULES:
            assert r.detect(history, {"dialect": dialect, "repair": r.default_repair}) == []


# --- totality: any structurally valid history, whatever is inside -------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
# Mostly near-valid calls, so that every repair gets exercised, and some garbage.
names = st.sampled_from(["f", "g"]) | st.sampled_from(["", None, 3])
arguments = st.sampled_from(["{}", '{"a": 1}', '{"a": ', "", "[1]"]) | json_values
functions = st.fixed_dictionaries({"name": names}, optional={"arguments": arguments}) | json_values
calls = st.fixed_dictionaries(
    {"function": functions},
    optional={
        "id": st.sampled_from(["call_a", "call_b", "", None]) | json_values,
        "type": st.just("function") | json_values,
        "index": st.integers(0, 3),
    },
)
parts = st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url"]), "text": json_values})
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "developer"])},
    optional={
        "content": json_values | st.lists(parts | st.text(max_size=4), max_size=3),
        "tool_calls": st.lists(calls, max_size=3)
        | st.lists(calls | json_values, max_size=3)
        | json_values,
        "tool_call_id": st.sampled_from(["call_a", ""]) | json_values,
    },
)


@pytest.mark.parametrize("dialect", ["openai", "deepseek", "gemini"])
@settings(max_examples=300, deadline=None)
@given(history=st.lists(messages, min_size=1, max_size=6))
def test_any_shape_never_raises_and_repairs_are_idempotent(
    dialect: str, history: list[dict[str, Any]]
) -> None:
    snapshot = copy.deepcopy(history)
    policy = _only_shape(dialect)
    outcome = sanitize_chat(history, policy)
    assert history == snapshot, "the engine mutated its input"
    sanitize_chat(history, _only_shape(dialect, "warn"))
    if not outcome.rejected:
        again = sanitize_chat(outcome.messages, policy)
        assert again.findings == (), [f.as_dict() for f in again.findings]
