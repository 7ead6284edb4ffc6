"""The Responses index (:mod:`proxy.core.responses.index`) against a fresh, plain computation.

1. The one-pass index holds what a plain walk over the items finds, field by field, whether
   :meth:`Items.of` built it, a rule's lookup did, or a repair handed it on (carried; the
   carrying alone: ``test_carry.py``).
2. Every rule finds exactly what it finds on the same history without the memo (each lookup
   builds anew, nothing is carried) and without the fast exits
   (:data:`~proxy.core.responses.index.FAST`), at every step of the pipeline, repairs applied.
3. The whole sanitizer gives the same outcome with and without the fast exits.
4. :meth:`Items.of`, which checks the items in its walk, refuses exactly what the item by item
   check (:func:`items_of`) refuses, with the same message and path.

The histories are the property tests' (valid agent histories, broken the ways clients break
them), plus breaks that reach the paths those do not: untyped items and references, call ids
missing, empty, not strings, repeated or on other items, outputs answered out of order,
``tool_search`` and legacy ``local_shell_call_output`` items, repeated item ids.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.core.policy import build_policy
from proxy.core.responses import index as fast
from proxy.core.responses.index import build, index_of
from proxy.core.responses.items import Items, items_of, kind
from proxy.core.rule import Hit
from proxy.core.wire import RESPONSES, sanitize_body
from proxy.errors import MalformedHistory
from tests.core.responses.test_properties import PROPERTIES, broken_bodies, valid_bodies

T = TypeVar("T")
Body = dict[str, Any]
POLICIES = {name: build_policy(name) for name in ("openai", "strict", "observe", "xai")}


class Unmemoised(Items):
    """A history whose every lookup computes afresh (no memo, nothing carried is read)."""

    __slots__ = ()

    def memo(self, key: str, compute: Callable[[Any], T]) -> T:
        return compute(self)


@contextmanager
def plain() -> Iterator[None]:
    """The rules without their fast exits."""
    fast.FAST = False
    try:
        yield
    finally:
        fast.FAST = True


def _calls(items: list[Body]) -> list[Body]:
    return [item for item in items if str(item.get("type", "")).endswith("_call")]


def _outputs(items: list[Body]) -> list[Body]:
    return [item for item in items if str(item.get("type", "")).endswith("_output")]


def _untyped(items: list[Body], at: int) -> None:
    for item in items:
        if item.get("type") == "message" and item.get("role") == "user":
            del item["type"]
    items.insert(at % (len(items) + 1), {"id": "msg_referenced"})


def _no_call_id(items: list[Body], at: int) -> None:
    tools = _calls(items) + _outputs(items)
    if tools:
        tools[at % len(tools)].pop("call_id", None)


def _odd_call_id(items: list[Body], at: int) -> None:
    tools = _calls(items) + _outputs(items)
    if tools:
        tools[at % len(tools)]["call_id"] = [7, "", None, ["x"]][at % 4]


def _long_call_id(items: list[Body], at: int) -> None:  # around the 64 characters allowed
    calls = _calls(items)
    if calls:
        old = calls[at % len(calls)].get("call_id")
        for item in items:
            if item.get("call_id") == old:
                item["call_id"] = "call_" + "7" * (59 + at % 2)  # 64 or 65


def _shared_call_id(items: list[Body], at: int) -> None:
    calls = _calls(items)
    if len(calls) > 1:
        calls[-1]["call_id"] = calls[0].get("call_id")
    items.insert(at % (len(items) + 1), {"role": "user", "content": "x", "call_id": "call_x"})


def _reordered_outputs(items: list[Body], at: int) -> None:
    outputs = [i for i, item in enumerate(items) if str(item.get("type")).endswith("_output")]
    run = [i for i in outputs if i - 1 in outputs or i + 1 in outputs]
    if run:
        items[run[0] : run[-1] + 1] = reversed(items[run[0] : run[-1] + 1])


def _ambiguous(items: list[Body], at: int) -> None:
    where = at % (len(items) + 1)
    items[where:where] = [
        {"type": "tool_search_call", "call_id": "ts_1", "execution": "client", "arguments": {}},
        {"type": "tool_search_output", "call_id": "ts_1", "execution": "client", "tools": []},
        {"type": "local_shell_call_output", "id": "call_gone", "output": "ok"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    ]


def _replayed_without_reasoning(items: list[Body], at: int) -> None:  # R4: calls by id
    for n, item in enumerate(_calls(items)):
        item["id"] = f"fc_{n}"
    items[:] = [item for item in items if item.get("type") != "reasoning"]


def _near_prefix(items: list[Body], at: int) -> None:  # R10: one letter short of the prefix
    for n, item in enumerate(items):
        if n % 3 == at % 3 and item.get("type") in ("function_call", "reasoning", "message"):
            item["id"] = f"{item['type'][0]}_{n}"


def _repeated_id(items: list[Body], at: int) -> None:
    first = items[at % len(items)]
    first["id"] = "msg_twice"
    items.append({"type": "message", "role": "assistant", "id": "msg_twice", "content": []})


EXTRA = {
    "untyped": _untyped,
    "no_call_id": _no_call_id,
    "odd_call_id": _odd_call_id,
    "long_call_id": _long_call_id,
    "shared_call_id": _shared_call_id,
    "reordered_outputs": _reordered_outputs,
    "ambiguous": _ambiguous,
    "repeated_id": _repeated_id,
    "near_prefix": _near_prefix,
    "replayed_without_reasoning": _replayed_without_reasoning,
}


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, Body]:
    """A policy and a body: valid, broken as clients break them, and broken a way more."""
    body = draw(st.one_of(valid_bodies(), broken_bodies()))
    for how in draw(st.lists(st.sampled_from([None, *EXTRA]), max_size=2)):
        if how is not None and body["input"]:
            body = copy.deepcopy(body)
            EXTRA[how](body["input"], draw(st.integers(0, 50)))
    return draw(st.sampled_from(list(POLICIES))), body


def _plain_index(history: Items) -> dict[str, Any]:
    """What the index should hold, each field from its own plain walk."""
    items = history.messages
    kinds = [kind(item) for item in items]
    return {
        "by_kind": {k: [i for i, x in enumerate(kinds) if x == k] for k in sorted(set(kinds))},
        "call_ids": {i: item["call_id"] for i, item in enumerate(items) if "call_id" in item},
        "ids": {i: item["id"] for i, item in enumerate(items) if "id" in item},
        "untyped": [i for i, item in enumerate(items) if not isinstance(item.get("type"), str)],
        "with_id": [i for i, item in enumerate(items) if item.get("id")],
        "calls": [i for i, k in enumerate(kinds) if k.endswith("_call") or k == "program"],
    }


def _as_plain(history: Items) -> dict[str, Any]:
    index = index_of(history)
    calls = frozenset({k for k in index.kind_set if k.endswith("_call")} | {"program"})
    return {
        "by_kind": dict(sorted(index.by_kind.items())),
        "call_ids": index.call_ids,
        "ids": index.ids,
        "untyped": index.untyped,
        "with_id": index.with_id,
        "calls": index.positions(calls),
    }


def _detect_both(history: Items, rule: Any, params: Any) -> list[Hit]:
    """The rule's hits on ``history`` (memo, fast exits), checked against a fresh plain run."""
    hits = rule.detect(history, params)
    with plain():
        again = rule.detect(Unmemoised(history.messages, history.origins, history.request), params)
    assert hits == again, rule.name
    return list(hits)


@PROPERTIES
@given(case=histories())
def test_the_index_holds_what_a_plain_walk_finds(case: tuple[str, Body]) -> None:
    _, body = case
    history = Items.of(body)
    assert _as_plain(history) == _plain_index(history)
    assert index_of(history) is index_of(history)  # one per history
    assert build(history) == index_of(history)


@PROPERTIES
@given(case=histories())
def test_every_rule_finds_what_a_fresh_plain_run_finds(case: tuple[str, Body]) -> None:
    name, body = case
    history = Items.of(body)
    for _ in range(3):  # the engine's passes, repairs applied as it applies them
        changed = False
        for rule, setting in POLICIES[name].active["responses"]:
            if history.tool_free and rule.tools_only:
                assert _detect_both(history, rule, setting.params) == [], rule.name
                continue
            hits = _detect_both(history, rule, setting.params)
            if not hits or setting.action not in rule.repairs:
                continue
            repaired = rule.repairs[setting.action](history, hits, setting.params)
            if repaired is not history:
                history, changed = repaired, True
                assert _as_plain(history) == _plain_index(history), rule.name  # carried
            if not history.messages:
                return
        if not changed:
            return


@PROPERTIES
@given(case=histories())
def test_the_fast_exits_change_no_outcome(case: tuple[str, Body]) -> None:
    name, body = case
    outcome = sanitize_body(RESPONSES, body, POLICIES[name])
    with plain():
        again = sanitize_body(RESPONSES, body, POLICIES[name])
    assert outcome == again


_ODD_ITEMS = [
    1,
    "text",
    None,
    [],
    {"type": 7},
    {"type": None, "role": "user", "content": "x"},
    {"type": ["message"]},
    {"type": {"a": 1}},
    {"content": "no type, role or id"},
    {"id": ""},
    {"id": 5},
    {"id": "msg_1"},
    {"role": "user", "content": "x"},
    {"type": "message", "role": "user", "content": "x"},
    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
]


def _refusal(check: Callable[[Any], Any], body: Any) -> tuple[str, str | None] | None:
    try:
        check(body)
    except MalformedHistory as e:
        return str(e), e.path
    return None


@PROPERTIES
@given(items=st.lists(st.sampled_from(_ODD_ITEMS), max_size=6))
def test_the_walk_refuses_what_the_item_check_refuses(items: list[Any]) -> None:
    body = {"model": "gpt-5", "input": copy.deepcopy(items)}
    refused = _refusal(items_of, body)
    assert _refusal(Items.of, body) == refused
    if refused is None:
        history = Items.of(body)
        assert history.messages is body["input"]
        assert _as_plain(history) == _plain_index(history)


@pytest.mark.parametrize("body", [[], {"input": 3}, {"input": {"type": "message"}}])
def test_a_body_or_input_of_the_wrong_shape_is_refused_by_both(body: Any) -> None:
    assert _refusal(Items.of, body) == _refusal(items_of, body) is not None
