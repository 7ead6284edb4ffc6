"""The fast walk (:mod:`proxy.core.responses.fastwalk`) against its plain twin
(:func:`proxy.core.responses.index.walk`).

1. On the histories clients send (the property tests' bodies, broken the ways clients break
   them and the ways ``test_index.py`` adds: untyped items, odd or shared call ids, ids
   everywhere) it answers, unless a call or output has no ``call_id`` or an output no
   ``output``, and what it answers is the plain walk's index: every field, the kinds in the
   same order, and the columns it hands the rules (each kind's call ids, the outputs
   holding a list) equal to what the plain index finds when asked.
2. On any history with one value replaced by another JSON value or one key removed, it
   answers the plain index or nothing, and nothing where the plain walk finds some item no
   object or its type neither a string nor absent (the request is refused).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.core.responses.fastwalk import walked
from proxy.core.responses.index import Index, walk
from proxy.core.responses.items import CALLS, OUTPUTS, Items
from proxy.errors import MalformedHistory
from tests.core.responses.test_index import histories
from tests.core.responses.test_properties import PROPERTIES, valid_bodies
from tests.factories import swapped

Body = dict[str, Any]
#: The kinds whose ``call_id`` and ``output`` the rules ask the index about.
ASKED = [CALLS, OUTPUTS, *({k} for k in CALLS | OUTPUTS)]


def _same(fast: Index | None, items: list[Any]) -> None:
    plain = walk(items)
    assert fast is not None
    assert plain is not None
    assert fast == plain
    assert list(fast.by_kind) == list(plain.by_kind)
    assert dict(fast.call_ids.items()) == plain.call_ids
    assert len(fast.call_ids) == len(plain.call_ids)
    asked = Index(plain.by_kind, plain.call_ids, plain.ids, plain.untyped)  # found when asked
    for kinds in ASKED:
        wanted = frozenset(kinds)
        assert _keys(fast, wanted) == _keys(asked, wanted), kinds
    for k in OUTPUTS:
        assert fast.lists(items, k, "output") == asked.lists(items, k, "output"), k


def _keys(index: Index, wanted: frozenset[str]) -> list[Any] | None:
    try:
        return index.keys(wanted)
    except KeyError:  # some item of those kinds has no call_id
        return None


def _unusual(items: list[Any]) -> bool:
    """Whether a call or output has no call_id, or an output no output."""
    return any(
        (item.get("type") in ("function_call", "function_call_output") and "call_id" not in item)
        or (item.get("type") == "function_call_output" and "output" not in item)
        for item in items
    )


@PROPERTIES
@given(case=histories())
def test_client_histories_are_walked_fast_into_the_plain_index(case: tuple[str, Body]) -> None:
    items = case[1]["input"]
    fast = walked(items)
    if _unusual(items):
        assert fast is None, "a call or output without call_id is left to the plain walk"
        return
    assert fast is not None, "an ordinary history is walked fast"
    _same(fast, items)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(["", "x", "message", "function_call", "function_call_output", "call_1"]),
    lambda inner: (
        st.lists(inner, max_size=2)
        | st.dictionaries(st.sampled_from(["type", "id", "call_id", "role"]), inner)
    ),
    max_leaves=3,
)


@PROPERTIES
@given(body=valid_bodies(), pick=st.integers(0, 10_000), new=json_values, drop=st.booleans())
def test_any_history_is_walked_as_the_plain_walk_walks_it_or_left_to_it(
    body: Body, pick: int, new: Any, drop: bool
) -> None:
    items = swapped(body["input"], pick, new, drop)
    fast = walked(items)
    if walk(items) is None:  # an item no object, or its type neither a string nor absent
        assert fast is None
        with pytest.raises(MalformedHistory):
            Items.of({"input": items})
    elif fast is not None:
        _same(fast, items)


@pytest.mark.parametrize(
    "item",
    [
        "text",
        None,
        [],
        {"type": 7},
        {"type": True},
        {"type": ["message"]},
        {"type": {"a": 1}},
        {"type": "function_call", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "output": "ok"},
        {"type": "function_call_output", "call_id": "call_1"},
    ],
)
def test_an_unusual_item_is_left_to_the_plain_walk(item: Any) -> None:
    items = [{"type": "message", "role": "user", "content": "hi"}, item]
    assert walked(items) is None


def test_untyped_items_are_indexed_under_their_kind_after_the_typed_ones() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "message", "role": "assistant", "content": [], "id": "msg_1"},
        {"id": "rs_1"},
        {"type": "message", "role": "user", "content": "x", "call_id": "call_1"},
    ]
    fast = walked(items)
    assert fast is not None
    assert list(fast.by_kind.items()) == [
        ("function_call", [1]),
        ("message", [0, 2, 4]),
        ("item_reference", [3]),
    ]
    assert dict(fast.call_ids) == {1: "call_1", 4: "call_1"}
    _same(fast, items)
