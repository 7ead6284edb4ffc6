"""A history edited by slices is the history rebuilt item by item, and its carried views are the
ones a fresh pass finds (issue 23: a repair does not pay for a second analysis).

:func:`assert_fresh` compares every view an edit carried over (the re-indexed groups, callers
and odd contents, and whatever cached or memoised view came along) with a fresh computation: on
random edits, and on every edit the repairs make to broken histories and to the golden cases.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.core.chat import splice
from proxy.core.chat.fast import cached
from proxy.core.chat.messages import History
from proxy.core.chat.rules import views
from proxy.core.policy import DIALECTS, build_policy
from tests.factories import DIALECTS as BROKEN
from tests.factories import broken_histories, histories, sanitize_chat

Message = dict[str, Any]
CASES = Path(__file__).parents[2] / "cases"


def assert_fresh(new: History) -> None:
    """Fail when a view ``new`` carried over from the history it was edited from differs from
    what a fresh pass over its messages finds."""
    fresh = History(new.messages, new.origins, new.request)
    carried, index = new.index, fresh.index
    got = (carried.positions, carried.callers, carried.odd_content, carried.roles)
    want = (index.positions, index.callers, index.odd_content, index.roles)
    assert got == want, f"carried index {got} != fresh {want}"
    assert list(carried.positions) == list(index.positions), "role order differs"
    for role, group in carried.by_role.items():
        assert list(group) == list(index.by_role[role]), f"by_role[{role!r}] differs"
    for name in ("keys", *splice._CALLER_VIEWS, *splice._TOOL_VIEWS):
        known, view = cached.known(carried, name)
        if known:
            assert _same(view, getattr(index, name)), f"carried {name} differs"
    known, facts = new.memoized("call_facts")
    if known:
        assert facts == views.call_facts(fresh), "carried call facts differ"
    for name in splice._ODD_VIEWS:
        known, view = new.memoized(name)
        if known:
            assert _same(view, getattr(views, name)(fresh)), f"carried {name} differs"


def _same(a: Any, b: Any) -> bool:
    return list(a) == list(b) if isinstance(a, Sequence) else bool(a == b)


@pytest.fixture
def checked_edits(monkeypatch: pytest.MonkeyPatch) -> list[History]:
    """Every edit of a chat history made while it is active is checked by :func:`assert_fresh`;
    the list of the edited histories that carried an index."""
    carry: Callable[[History, History, Any], None] = History._carry
    checked: list[History] = []

    def checking(self: History, edited: History, runs: Any) -> None:
        carry(self, edited, runs)
        if edited.built_index is not None:
            assert_fresh(edited)
            checked.append(edited)

    monkeypatch.setattr(History, "_carry", checking)
    return checked


def _reference(history: History, inserts: dict[int, list[Any]], skip: set[int]) -> History:
    """The rebuild every repair used before slices: item by item."""
    entries = []
    for i, message in enumerate(history.messages):
        if i not in skip:
            entries.append((message, i))
        entries.extend(inserts.get(i, ()))
    return history.rebuild(entries)


@st.composite
def edits(draw: st.DrawFn) -> tuple[History, dict[int, list[Any]], set[int]]:
    messages = draw(st.one_of(histories(), broken_histories("openai")))
    history = History(messages)
    positions = st.integers(0, len(messages) - 1)
    skip = draw(st.sets(positions, max_size=3))
    new = st.sampled_from(
        [
            {"role": "user", "content": "salvaged"},
            {"role": "tool", "tool_call_id": "call_x", "content": "moved"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "system", "content": ""},
        ]
    )
    inserts: dict[int, list[Any]] = {}
    for at in draw(st.sets(positions, max_size=3)):
        moved = draw(st.sampled_from(sorted(skip) or [None]))
        item = messages[moved] if moved is not None else draw(new)
        inserts[at] = [(item, moved)]
    return history, inserts, skip


@settings(max_examples=200, deadline=None)
@given(edits(), st.booleans())
def test_an_edit_is_the_item_by_item_rebuild_and_carries_fresh_views(
    edit: tuple[History, dict[int, list[Any]], set[int]], analysed: bool
) -> None:
    history, inserts, skip = edit
    if analysed:  # what the rules before the repair computed
        views.call_facts(history)
        history.index.regular  # noqa: B018 (a cached view)
        history.index.keys  # noqa: B018 (carried group by group: issue 34)
    edited = history.edited(inserts, skip)
    expected = _reference(history, inserts, skip)
    assert edited.messages == expected.messages
    assert all(a is b for a, b in zip(edited.messages, expected.messages, strict=True))
    assert [edited.origin(i) for i in range(len(edited))] == [
        expected.origin(i) for i in range(len(expected))
    ]
    assert_fresh(edited)
    if analysed:
        assert edited.built_index is not None  # carried, not to be built again


@st.composite
def replacements(draw: st.DrawFn) -> tuple[History, dict[int, list[Any]], set[int]]:
    """Edits that swap messages in place (a salvaged orphan result becomes a user message):
    each replaced message's role may leave its group, or start one the history lacked."""
    messages = draw(st.one_of(histories(), broken_histories("openai")))
    replaced = draw(st.sets(st.integers(0, len(messages) - 1), min_size=1, max_size=3))
    new = st.sampled_from(
        [
            {"role": "user", "content": "salvaged"},
            {"role": "tool", "tool_call_id": "call_x", "content": "moved"},
            {"role": "assistant", "content": None, "tool_calls": []},
            {"role": "system", "content": ""},
            {"role": "developer", "content": "note"},
        ]
    )
    return History(messages), {q: [(draw(new), None)] for q in replaced}, replaced


@settings(max_examples=300, deadline=None)
@given(replacements())
def test_a_message_swapped_in_place_carries_fresh_views(
    edit: tuple[History, dict[int, list[Any]], set[int]],
) -> None:
    history, inserts, skip = edit
    views.call_facts(history)
    history.index.keys  # noqa: B018 (a cached view)
    edited = history.edited(inserts, skip)
    assert edited.messages == _reference(history, inserts, skip).messages
    assert_fresh(edited)  # the carried index (groups, their order) is what a fresh pass finds


def test_a_role_whose_first_message_was_swapped_moves_in_the_group_order() -> None:
    """The groups beyond tool, assistant and user come in order of first appearance: swapping
    the first system message away puts the developer group before the system group."""
    history = History(
        [
            {"role": "system", "content": "a"},
            {"role": "developer", "content": "b"},
            {"role": "user", "content": "c"},
            {"role": "system", "content": "d"},
        ]
    )
    history.index  # noqa: B018
    edited = history.edited({0: [({"role": "user", "content": "e"}, None)]}, {0})
    assert list(edited.index.positions) == ["user", "developer", "system"]


def test_the_check_catches_a_wrong_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(splice, "_renumbered", lambda where, gone, table: [])
    history = History(
        [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "b"}]
    )
    history.index  # noqa: B018
    with pytest.raises(AssertionError, match="carried index"):
        assert_fresh(history.edited({}, {1}))


@pytest.mark.parametrize("preset", DIALECTS)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_every_repair_of_a_broken_history_carries_fresh_views(
    preset: str, data: st.DataObject, checked_edits: list[History]
) -> None:
    messages = data.draw(broken_histories(data.draw(st.sampled_from(BROKEN))))
    sanitize_chat(messages, build_policy(preset), {"model": "m"})


def test_every_repair_of_a_golden_case_carries_fresh_views(checked_edits: list[History]) -> None:
    cases = [case for file in sorted(CASES.glob("*.json")) for case in json.loads(file.read_text())]
    for case in cases:
        policy = build_policy(case["policy"], overrides=case.get("overrides"))
        sanitize_chat(case["input"], policy, case.get("request", {}))
    assert len(checked_edits) > 20, "the pairing repairs' edits went unchecked"
