"""The index an edit carries over (:mod:`proxy.core.gemini.carry`) is what a fresh walk finds:
after random swaps, drops and inserts of contents, valid, broken or odd, on histories the
property tests make (the repairs' own edits are checked in ``test_index.py``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from proxy.core.gemini.index import index_of, scan
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import check_content
from proxy.core.history import MalformedHistory
from tests.core.gemini.test_index import INDEX_BREAKS, near_valid
from tests.core.gemini.test_properties import SETTINGS, _turns, valid_bodies

Body = dict[str, Any]


def _valid(content: Any) -> bool:
    """Whether ``content`` passes the request check (a repair makes no other)."""
    try:
        check_content(content, "contents[0]")
    except MalformedHistory:
        return False
    return True


_new_contents = st.one_of(
    st.sampled_from(
        [
            {"role": "user", "parts": [{"text": "go on"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "", "response": 1}}]},
            {"role": "assistant", "parts": [{"function_call": {"name": "f", "id": "x"}}]},
            {"parts": [{"text": ""}, {"inlineData": {"data": "AA=="}}]},
            {"role": "model", "parts": []},
        ]
    ),
    near_valid().map(lambda contents: contents[0]).filter(_valid),
)


@st.composite
def indexed_histories(draw: st.DrawFn) -> Contents:
    body, model = draw(valid_bodies("gemini"))
    how = draw(st.sampled_from([None, *INDEX_BREAKS]))
    turns = _turns(body["contents"])
    if how is not None and turns:
        INDEX_BREAKS[how](body["contents"], turns[draw(st.integers(0, len(turns) - 1))])
    history = Contents.of(body, model)
    index_of(history)
    return history


@SETTINGS
@given(history=indexed_histories(), data=st.data())
def test_a_replaced_history_carries_what_a_fresh_walk_finds(
    history: Contents, data: st.DataObject
) -> None:
    places = data.draw(st.sets(st.integers(0, len(history) - 1), min_size=1, max_size=3))
    changes = {i: data.draw(_new_contents) for i in places}
    replaced = history.replace(changes)
    assert replaced.memoized("index")[0], "carried, not walked again"
    assert index_of(replaced) == scan(replaced.messages)


@SETTINGS
@given(history=indexed_histories(), data=st.data())
def test_an_edited_history_carries_what_a_fresh_walk_finds(
    history: Contents, data: st.DataObject
) -> None:
    n = len(history)
    skip = data.draw(st.sets(st.integers(0, n - 1), max_size=3))
    where = data.draw(st.sets(st.integers(0, n - 1), max_size=3))
    inserts = {i: [(data.draw(_new_contents), None)] for i in where}
    edited = history.edited(inserts, skip)
    assert edited.memoized("index")[0], "carried, not walked again"
    assert index_of(edited) == scan(edited.messages)
