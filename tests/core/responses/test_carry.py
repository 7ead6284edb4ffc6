"""The index handed on through an edit (:meth:`Index.replaced`, :meth:`Index.moved`) against
the index of the new items built afresh, and ``insert_before`` (which edits by runs) against a
plain rebuild."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from proxy.core.responses.index import build, index_of
from proxy.core.responses.items import Items
from proxy.core.responses.rules.common import insert_before
from tests.core.responses.test_index import Body, _as_plain, _plain_index
from tests.core.responses.test_properties import PROPERTIES


def test_a_repair_hands_on_an_index_of_its_own() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        {"type": "function_call", "call_id": "call_2", "name": "f", "arguments": "{}"},
    ]
    history = Items.of({"input": items})
    before = index_of(history)
    salvaged = history.replace({1: {"role": "user", "content": "the output"}})
    assert salvaged.memoized("index")[0]  # carried, not walked again
    assert index_of(salvaged).of("message") == [0, 1]
    assert index_of(salvaged).call_ids == {2: "call_2"}
    assert index_of(history) is before
    assert before.of("function_call_output") == [1]  # the old history's index is untouched
    answered = salvaged.edited({2: [(items[1], None)]}, {0})
    assert index_of(answered).by_kind == {
        "message": [0],
        "function_call": [1],
        "function_call_output": [2],
    }
    assert index_of(answered) == build(answered)


_ITEMS = st.sampled_from(
    [
        {"role": "user", "content": "x"},
        {"type": "message", "role": "assistant", "content": [], "id": "msg_1"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"id": "fc_9"},
        {"type": "local_shell_call_output", "id": "call_2", "output": "ok"},
    ]
)


@PROPERTIES
@given(
    items=st.lists(_ITEMS, max_size=8),
    changes=st.dictionaries(st.integers(0, 7), _ITEMS, max_size=3),
    drop=st.sets(st.integers(0, 7), max_size=3),
    inserts=st.dictionaries(st.integers(0, 7), st.lists(_ITEMS, min_size=1, max_size=2)),
)
def test_a_carried_index_is_the_index_of_the_new_items(
    items: list[Body],
    changes: dict[int, Body],
    drop: set[int],
    inserts: dict[int, list[Body]],
) -> None:
    history = Items(items)
    index_of(history)  # known, so that edits hand it on
    replaced = history.replace({i: item for i, item in changes.items() if i < len(items)})
    edited = history.edited({i: [(x, None) for x in xs] for i, xs in inserts.items()}, drop)
    for new in (replaced, edited, edited.without({0})):
        assert new.memoized("index")[0] or new is history
        assert _as_plain(new) == _plain_index(new)
        assert index_of(new) == build(new)


@PROPERTIES
@given(
    size=st.integers(0, 6),
    inserts=st.dictionaries(st.integers(0, 6), st.integers(1, 2), max_size=3),
    skip=st.sets(st.integers(0, 5), max_size=3),
)
def test_insert_before_copies_runs_as_a_plain_rebuild_would(
    size: int, inserts: dict[int, int], skip: set[int]
) -> None:
    items = [{"role": "user", "content": str(i)} for i in range(size)]
    new = {
        j: [({"role": "user", "content": f"new {j}.{k}"}, None) for k in range(n)]
        for j, n in inserts.items()
        if j <= size
    }
    expected: list[tuple[Body, int | None]] = []
    for i in range(size + 1):
        expected += new.get(i, [])
        if i < size and i not in skip:
            expected.append((items[i], i))
    got = insert_before(Items(items), new, skip)
    assert (
        list(zip(got.messages, [got.origin(i) for i in range(len(got))], strict=True)) == expected
    )
