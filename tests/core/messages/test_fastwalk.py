"""The fast walk (:mod:`proxy.core.messages.fastwalk`) against its plain twin
(:func:`proxy.core.messages.index.walk`).

1. On the histories clients send (the property tests' Claude-Code-like bodies, broken the ways
   clients break them, with cache breakpoints, blank texts and odd server calls) it answers,
   and what it answers is the plain walk's index: every field, the types in the same order,
   and the id columns, the roles and whether results lead their messages and follow their
   calls, which it hands the rules,
   equal to what the plain index finds when asked.
2. On any history with one value replaced by another JSON value or one key removed, it
   answers the plain index or nothing, and nothing where the plain walk finds a shape error.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from proxy.core.engine import sanitize
from proxy.core.messages.fastwalk import Grouped, walked
from proxy.core.messages.index import Index, index_of, walk
from proxy.core.messages.items import Messages
from proxy.errors import MalformedHistory
from tests.core.messages.test_properties import (
    BREAKS,
    POLICIES,
    SETTINGS,
    Body,
    _break,
    valid_bodies,
)
from tests.factories import swapped

CACHE = {"type": "ephemeral"}


def _same(fast: Index | None, messages: list[Body]) -> None:
    plain = walk(messages)
    assert fast == plain
    assert list(fast.by_type) == list(plain.by_type)
    asked = Index(plain.roles, plain.by_type, [], [], [], [])  # what it finds when asked
    for kind, key in (("tool_use", "id"), ("tool_result", "tool_use_id")):
        assert fast.values(kind, key) == asked.values(kind, key)
    assert fast.blocks("thinking") == asked.blocks("thinking")
    assert fast.results_lead() == asked.results_lead()
    assert fast.role_set() == asked.role_set()
    assert fast.results_follow_calls() == asked.results_follow_calls()


def _marked(messages: list[Body], k: int) -> None:
    """Cache breakpoints on every ``k % 3 + 1``-th block (of any type), and inside the results
    whose output is a list."""
    every = k % 3 + 1
    for m in messages:
        content = m["content"]
        for j, b in enumerate(content if type(content) is list else ()):
            block = {**b, "cache_control": CACHE} if j % every == 0 else b
            if block["type"] == "tool_result" and type(block["content"]) is list and k % 2:
                inner = block["content"]
                block["content"] = [{**inner[0], "cache_control": CACHE}, *inner[1:]]
            content[j] = block


def _odd_server_call(messages: list[Body], k: int) -> None:
    for m in messages:
        for b in m["content"] if type(m["content"]) is list else ():
            if b["type"] == "server_tool_use":
                b.pop("name")


def _blank(messages: list[Body], k: int) -> None:
    messages[k % len(messages)]["content"] = " " if k % 2 else []


def _empty_text(messages: list[Body], k: int) -> None:
    """A text block emptied (``""``, or whitespace only): the blank texts rules look for."""
    texts = [b for m in messages if type(m["content"]) is list for b in m["content"]]
    texts = [b for b in texts if b["type"] == "text"]
    if texts:
        texts[k % len(texts)]["text"] = " \n" if k % 2 else ""


def _text_between(messages: list[Body], k: int) -> None:
    """Text between a message's results (its first still a result): results no longer lead."""
    for m in messages[k % len(messages) :]:
        content = m["content"]
        if type(content) is list and [b["type"] for b in content[:2]] == ["tool_result"] * 2:
            content.insert(1, {"type": "text", "text": "hook output"})
            return


def _roles_swapped(messages: list[Body], k: int) -> None:
    """The message of some results (or of some calls) in another role: results no longer
    follow their calls (a system message holding results, calls in a user message)."""
    kind = ("tool_result", "tool_use")[k % 2]
    holding = [m for m in messages if type(m["content"]) is list]
    holding = [m for m in holding if any(b["type"] == kind for b in m["content"])]
    if holding:
        m = holding[k % len(holding)]
        m["role"] = ("system", "assistant", "user")[k % 3] if kind == "tool_result" else "user"


EXTRA = {
    "roles_swapped": _roles_swapped,
    "marked": _marked,
    "odd_server_call": _odd_server_call,
    "blank": _blank,
    "empty_text": _empty_text,
    "text_between": _text_between,
}


@SETTINGS
@given(
    body=valid_bodies("anthropic"),
    how=st.sampled_from([None, "marked", "text_between", "roles_swapped", *BREAKS, *EXTRA]),
    at=st.integers(0, 20),
)
def test_client_histories_are_walked_fast_into_the_plain_index(
    body: Body, how: str | None, at: int
) -> None:
    if how in BREAKS:
        body = _break(body, how, at)
    elif how is not None:
        EXTRA[how](body["messages"], at)
    fast = walked(body["messages"])
    assert fast is not None, "an ordinary history is walked fast"
    _same(fast, body["messages"])


@SETTINGS
@given(body=valid_bodies("anthropic"))
def test_a_clean_history_is_checked_without_the_places_of_its_blocks(body: Body) -> None:
    """The rules read a clean history's columns, never its blocks' places: the fast walk's
    grouping by type (:class:`Grouped`) is never made."""
    history = Messages.of(body)
    assume(not sanitize(history, POLICIES["anthropic"], "messages").findings)
    by_type = index_of(history).by_type
    assert isinstance(by_type, Grouped)
    assert by_type._groups is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["", " ", "text", "tool_use"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from(["type"]), inner),
    max_leaves=3,
)


@SETTINGS
@given(
    body=valid_bodies("anthropic"), pick=st.integers(0, 10_000), new=json_values, drop=st.booleans()
)
def test_any_history_is_walked_as_the_plain_walk_walks_it_or_left_to_it(
    body: Body, pick: int, new: Any, drop: bool
) -> None:
    messages = swapped(body["messages"], pick, new, drop)
    fast = walked(messages)
    try:
        walk(messages)
    except MalformedHistory:
        assert fast is None
        return
    if fast is not None:
        _same(fast, messages)


@pytest.mark.parametrize(
    "block",
    [
        {"type": "tool_use", "id": "a", "name": "", "input": {}},
        {"type": "tool_use", "id": "a", "name": "f", "input": "{}"},
    ],
)
def test_an_odd_call_is_left_to_the_plain_walk(block: Body) -> None:
    messages = [{"role": "assistant", "content": [block]}]
    assert walk(messages).odd_calls == [(0, 0, block)]
    assert walked(messages) is None


@pytest.mark.parametrize(
    "message",
    [
        "text",
        {"role": 1, "content": "hi"},
        {"content": "hi"},
        {"role": "user"},
        {"role": "user", "content": [{"type": "tool_use", "id": 1, "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": ["text"]}]},
        {"role": "user", "content": [{"type": "server_tool_use", "id": None}]},
    ],
)
def test_a_shape_error_is_left_to_the_plain_walk(message: Any) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, message]
    with pytest.raises(MalformedHistory):
        walk(messages)
    assert walked(messages) is None
