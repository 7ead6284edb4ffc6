"""The Responses sanitizer's invariants (DESIGN §4), judged by the independent emulator.

1. Valid out: a broken history comes out accepted by the emulator (or rejected with a path).
2. No false positives: a valid history yields no finding and the very same list.
3. Idempotent: sanitizing the output again finds nothing.
4. Nothing silently lost: the input is never mutated; every user text and call output stays.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.core.policy import build_policy
from proxy.core.wire import RESPONSES, sanitize_body
from proxy.emulator.responses import validate_responses

OPENAI = build_policy("openai")
PROPERTIES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Item = dict[str, Any]


def _hash(*parts: object) -> str:
    return hashlib.sha1(repr(parts).encode(), usedforsecurity=False).hexdigest()


def _call(kind: str, h: str, k: int, ids: bool) -> Item:
    cid = f"call_{h[:8]}_{k}"
    if kind == "local_shell_call":
        action = {"type": "exec", "command": ["ls"], "env": {}}
        return {"type": kind, "call_id": cid, "status": "completed", "action": action}
    item: Item = {"type": kind, "call_id": cid, "name": "tool"}
    item.update({"arguments": "{}"} if kind == "function_call" else {"input": "x"})
    if ids:
        item["id"] = f"{'fc' if kind == 'function_call' else 'ctc'}_{_tag(h, k)}"
    return item


def _tag(h: str, k: int) -> str:
    """An item id suffix: ``<40 hex>_<k>`` ties an item to ``rs_<40 hex>`` (see the emulator)."""
    return f"{h}_{k}" if len(h) == 40 else f"{h}{k:02d}"


def _output(call: Item, n: int) -> Item:
    kind = (
        "custom_tool_call_output" if call["type"] == "custom_tool_call" else "function_call_output"
    )
    return {"type": kind, "call_id": call["call_id"], "output": f"output {n} of {call['call_id']}"}


@st.composite
def _response(draw: st.DrawFn, h: str, reasoning: bool, encrypted: bool) -> list[Item]:
    items: list[Item] = []
    ids = draw(st.booleans())
    if reasoning:
        rs: Item = {"type": "reasoning", "id": f"rs_{h}", "summary": []}
        if encrypted or draw(st.booleans()):
            rs["encrypted_content"] = "gAAAAA" + h
        items.append(rs)
    kinds = st.sampled_from(["function_call", "custom_tool_call", "local_shell_call"])
    calls = [_call(draw(kinds), h, k, ids) for k in range(draw(st.integers(0, 3)))]
    if not calls:
        text = [{"type": "output_text", "text": f"answer {h[:6]}"}]
        message: Item = {"type": "message", "role": "assistant", "content": text}
        return [*items, {**message, "id": f"msg_{_tag(h, 0)}"} if ids else message]
    outputs = [_output(call, n) for n, call in enumerate(calls)]
    return [*items, *calls, *draw(st.permutations(outputs))]


@st.composite
def valid_bodies(draw: st.DrawFn) -> dict[str, Any]:
    reasoning = draw(st.booleans())
    store = draw(st.sampled_from([None, True, False]))
    items: list[Item] = []
    for turn in range(draw(st.integers(1, 3))):
        items.append({"role": "user", "content": f"question {turn}"})
        for r in range(draw(st.integers(0, 2))):
            h = _hash(turn, r) if reasoning else _hash(turn, r)[:30]
            items += draw(_response(h, reasoning, store is False))
            if items[-1]["type"] == "message":
                break  # the model answered in text: the turn is over (the user speaks next)
    body: dict[str, Any] = {"model": "gpt-5" if reasoning else "gpt-4.1", "input": items}
    if store is not None:
        body["store"] = store
    return body


def _positions(items: list[Item], *types: str) -> list[int]:
    return [i for i, item in enumerate(items) if item.get("type") in types]


def _mutate(draw: st.DrawFn, body: dict[str, Any]) -> None:  # noqa: C901 - a table of mutations
    items: list[Item] = body["input"]
    outputs = _positions(items, "function_call_output", "custom_tool_call_output")
    calls = _positions(items, "function_call", "custom_tool_call", "local_shell_call")
    mutation = draw(
        st.sampled_from(
            [
                "drop_output",
                "drop_call",
                "early_output",
                "duplicate",
                "drop_reasoning",
                "long_id",
                "bad_prefix",
                "output_text",
                "store_false",
                "trailing_reasoning",
            ]
        )
    )
    if mutation == "drop_output" and outputs:
        del items[draw(st.sampled_from(outputs))]
    elif mutation == "drop_call" and calls:
        del items[draw(st.sampled_from(calls))]
    elif mutation == "early_output" and outputs:
        o = draw(st.sampled_from(outputs))
        c = next((i for i in calls if items[i]["call_id"] == items[o]["call_id"]), o)
        items.insert(min(c, o), items.pop(o))
    elif mutation == "duplicate":
        i = draw(st.integers(0, len(items) - 1))
        items.insert(i + 1, copy.deepcopy(items[i]))
    elif mutation == "drop_reasoning" and _positions(items, "reasoning"):
        del items[draw(st.sampled_from(_positions(items, "reasoning")))]
    elif mutation == "long_id" and calls:
        old = items[draw(st.sampled_from(calls))]["call_id"]
        for item in items:
            if item.get("call_id") == old:
                item["call_id"] = "toolu_" + old * 10
    elif mutation == "bad_prefix" and calls:
        items[draw(st.sampled_from(calls))]["id"] = "item_" + "9" * 24
    elif mutation == "output_text" and outputs:
        item = items[draw(st.sampled_from(outputs))]
        item["output"] = [{"type": "output_text", "text": item["output"], "annotations": []}]
    elif mutation == "store_false":
        body["store"] = False
        for item in items:
            if item.get("type") == "reasoning":
                item.pop("encrypted_content", None)
    elif mutation == "trailing_reasoning":
        items.append({"type": "reasoning", "id": "rs_trailing", "summary": []})


@st.composite
def broken_bodies(draw: st.DrawFn) -> dict[str, Any]:
    body = draw(valid_bodies())
    for _ in range(draw(st.integers(1, 3))):
        _mutate(draw, body)
    return body


def _texts(items: list[Item]) -> str:
    """Every user text and call output, as one searchable string."""
    return json.dumps(items)


def _kept(items: list[Item]) -> list[str]:
    kept = []
    for item in items:
        if item.get("role") == "user":
            kept.append(json.dumps(item["content"])[1:-1])
        elif str(item.get("type", "")).endswith("_output"):
            output = item["output"]
            kept.append(output if isinstance(output, str) else output[0]["text"])
    return kept


@PROPERTIES
@given(body=valid_bodies())
def test_valid_histories_pass_untouched(body: dict[str, Any]) -> None:
    assert validate_responses(body) is None, "the generator made an invalid history"
    outcome = sanitize_body(RESPONSES, body, OPENAI)
    assert outcome.findings == ()
    assert outcome.messages is body["input"]


@PROPERTIES
@given(body=broken_bodies())
def test_broken_histories_come_out_valid(body: dict[str, Any]) -> None:
    snapshot = copy.deepcopy(body)
    outcome = sanitize_body(RESPONSES, body, OPENAI)
    assert body == snapshot, "sanitize_body mutated its input"
    if outcome.rejected:  # what no repair can save is rejected, naming the item
        assert outcome.rejection().path.startswith(("input[", "conversation"))
        return
    fixed = {**body, "input": outcome.messages}
    rejection = validate_responses(fixed)
    assert rejection is None, (rejection.message, outcome.messages)
    assert sanitize_body(RESPONSES, fixed, OPENAI).findings == ()
    forwarded = _texts(outcome.messages)
    for text in _kept(body["input"]):
        assert text in forwarded, f"lost: {text!r}"
    for finding in outcome.findings:
        assert finding.path.startswith("input[")


@PROPERTIES
@given(body=broken_bodies())
def test_whatever_the_emulator_refuses_the_sanitizer_names(body: dict[str, Any]) -> None:
    if validate_responses(body) is not None:
        assert sanitize_body(RESPONSES, body, OPENAI).findings
