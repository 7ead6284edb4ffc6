"""A history edited by slices is the history rebuilt item by item, and its carried views are the
ones a fresh pass finds (issue 23: a repair does not pay for a second analysis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.core.chat import splice
from proxy.core.chat.messages import History
from proxy.core.chat.rules import views
from tests.factories import broken_histories, histories

Message = dict[str, Any]


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
    edited = history.edited(inserts, skip)
    expected = _reference(history, inserts, skip)
    assert edited.messages == expected.messages
    assert all(a is b for a, b in zip(edited.messages, expected.messages, strict=True))
    assert [edited.origin(i) for i in range(len(edited))] == [
        expected.origin(i) for i in range(len(expected))
    ]
    assert splice.CHECK  # the suite's conftest: the carried views were compared with fresh ones
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
    edited = history.edited(inserts, skip)
    assert edited.messages == _reference(history, inserts, skip).messages
    assert splice.CHECK  # the carried index (groups, their order) was compared with a fresh one


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


def test_the_check_catches_a_wrong_carry(monkeypatch: Any) -> None:
    monkeypatch.setattr(splice, "_shifted", lambda positions, start, end, shift: [])
    history = History(
        [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "x", "content": "b"}]
    )
    history.index  # noqa: B018
    try:
        history.edited({}, {1})
    except AssertionError:
        return
    raise AssertionError("a carried index that differs from a fresh one went unnoticed")
