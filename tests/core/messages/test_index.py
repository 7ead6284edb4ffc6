"""The Messages index (:mod:`proxy.core.messages.index`) against a fresh, plain computation.

1. The one-pass index holds what a plain walk over ``blocks_at`` finds, field by field.
2. Every rule finds exactly what it finds on the same history without the memo (each lookup
   builds the index anew) and without the fast exits (:data:`~proxy.core.messages.index.FAST`),
   at every step of the pipeline, repairs applied: a repaired history never reads an index
   left from the history it came from.
3. The whole sanitizer gives the same outcome with and without the fast exits.

The histories are the property tests' (valid Claude-Code-like bodies, broken the ways clients
break them), plus breaks that reach the rules those do not: cache breakpoints, server results
cut from their call, ids out of pattern or used twice, roles and blocks an upstream refuses.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from hypothesis import given
from hypothesis import strategies as st

from proxy.core.messages import index as fast
from proxy.core.messages.index import build, index_of
from proxy.core.messages.items import Messages, blocks
from proxy.core.messages.rules.ids import _all_match
from proxy.core.rule import Hit
from proxy.core.wire import MESSAGES, sanitize_body
from tests.core.messages.test_properties import (
    BREAKS,
    MODELS,
    POLICIES,
    SETTINGS,
    Body,
    _break,
    _results_turn,
    valid_bodies,
)

T = TypeVar("T")
CACHE = {"type": "ephemeral"}


class Unmemoised(Messages):
    """A history whose every lookup computes afresh (no memo, nothing seeded is read)."""

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


def _cache_everywhere(messages: list[Body], i: int | None) -> None:  # M16
    for m in messages[-6:]:
        if isinstance(m["content"], list) and m["content"]:
            m["content"][-1]["cache_control"] = CACHE


def _orphan_server_result(messages: list[Body], i: int | None) -> None:  # M10
    block = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_gone", "content": []}
    messages.insert(1, {"role": "assistant", "content": [block]})


def _bad_ids(messages: list[Body], i: int | None) -> None:  # M7 and M5
    for m in messages:
        for b in blocks(m):
            if b["type"] == "tool_use":
                b["id"] = "functions.Bash:0"
            elif b["type"] == "tool_result":
                b["tool_use_id"] = "functions.Bash:0"


def _odd_blocks(messages: list[Body], i: int | None) -> None:  # M22, M23, M13, M26
    messages.insert(1, {"role": "assistant", "content": [{"type": "redacted_thinking"}]})
    messages.insert(1, {"role": "user", "content": "  "})
    if i is not None:
        i += 2
        reference = {"type": "tool_reference", "tool_name": "read_file"}
        messages[i]["content"][0]["content"] = [reference]
    if len(messages) > 4:
        messages[3] = {**messages[3], "role": "tool"}


def _blank_late(messages: list[Body], i: int | None) -> None:  # M11, M12 past the first turn
    last = messages[-1]
    text = last["content"] if isinstance(last["content"], str) else "go on"
    last["content"] = [{"type": "text", "text": " \n"}, {"type": "text", "text": text}]


INDEX_BREAKS = {
    **BREAKS,
    "cache": _cache_everywhere,
    "orphan_server": _orphan_server_result,
    "bad_ids": _bad_ids,
    "odd_blocks": _odd_blocks,
    "blank_late": _blank_late,
}


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, Body]:
    """A provider and a body, broken (or not) one way or two."""
    provider = draw(st.sampled_from(list(MODELS)))
    body = draw(valid_bodies(provider))
    for how in draw(st.lists(st.sampled_from([None, *INDEX_BREAKS]), min_size=1, max_size=2)):
        if how is not None:
            body = _broken(body, how, draw(st.integers(0, 3)))
    return provider, body


def _broken(body: Body, how: str, at: int) -> Body:
    if how in BREAKS:
        return _break(body, how, at)
    broken = copy.deepcopy(body)
    INDEX_BREAKS[how](broken["messages"], _results_turn(broken["messages"], at))
    return broken


def _plain_index(history: Messages) -> dict[str, Any]:
    """What the index should hold, each field from its own plain walk."""
    located = list(history.blocks_at())
    types = sorted({b["type"] for _, _, b in located})
    return {
        "roles": [m.get("role") for m in history.messages],
        "kinds": [{b["type"] for b in blocks(m)} for m in history.messages],
        "by_type": {k: [x for x in located if x[2]["type"] == k] for k in types},
        "empty": [
            i
            for i, m in enumerate(history.messages)
            if m["content"] == [] or (isinstance(m["content"], str) and not m["content"].strip())
        ],
        "blank": [
            (i, j) for i, j, b in located if b["type"] == "text" and not str(b["text"]).strip()
        ],
        "marked": [(i, j, _marks(b)) for i, j, b in located if _marks(b)],
    }


def _marks(block: Body) -> int:
    inner = block.get("content")
    parts = inner if isinstance(inner, list) else []
    return sum(isinstance(b, dict) and b.get("cache_control") is not None for b in [block, *parts])


def _as_plain(history: Messages) -> dict[str, Any]:
    index = index_of(history)
    return {
        "roles": index.roles,
        "kinds": [{k for k in index.by_type if index.holds(i, {k})} for i in range(len(history))],
        "by_type": dict(sorted(index.by_type.items())),
        "empty": index.empty,
        "blank": index.blank,
        "marked": index.marked,
    }


def _fresh(history: Messages) -> Unmemoised:
    return Unmemoised(history.messages, history.origins, history.request)


def _detect_both(history: Messages, rule: Any, params: Any) -> list[Hit]:
    """The rule's hits on ``history`` (memo, fast exits), checked against a fresh plain run."""
    hits = rule.detect(history, params)
    with plain():
        again = rule.detect(_fresh(history), params)
    assert hits == again, rule.name
    return list(hits)


@SETTINGS
@given(case=histories())
def test_the_index_holds_what_a_plain_walk_finds(case: tuple[str, Body]) -> None:
    _, body = case
    history = Messages.of(body)
    assert _as_plain(history) == _plain_index(history)
    assert index_of(history) is index_of(history)  # one per history
    assert build(history) == index_of(history)


@SETTINGS
@given(case=histories())
def test_every_rule_finds_what_a_fresh_plain_run_finds(case: tuple[str, Body]) -> None:
    provider, body = case
    history: Messages = Messages.of(body)
    for _ in range(3):  # the engine's passes, repairs applied as it applies them
        changed = False
        for rule, setting in POLICIES[provider].active["messages"]:
            if history.tool_free and rule.tools_only:
                assert _detect_both(history, rule, setting.params) == [], rule.name
                continue
            hits = _detect_both(history, rule, setting.params)
            if not hits or setting.action not in rule.repairs:
                continue
            repaired = rule.repairs[setting.action](history, hits, setting.params)
            if repaired is not history:
                history, changed = repaired, True
                assert _as_plain(history) == _plain_index(history), rule.name
            if not history.messages:
                return
        if not changed:
            return


@SETTINGS
@given(case=histories())
def test_the_fast_exits_change_no_outcome(case: tuple[str, Body]) -> None:
    provider, body = case
    outcome = sanitize_body(MESSAGES, body, POLICIES[provider])
    with plain():
        again = sanitize_body(MESSAGES, body, POLICIES[provider])
    assert outcome == again


def test_a_repair_gets_a_fresh_index_and_new_fields_keep_it() -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": " "}, {"type": "text", "text": "hi"}],
            }
        ],
    }
    history = Messages.of(body)
    assert index_of(history).blank == [(0, 0)]
    dropped = history.replace({0: {"role": "user", "content": [{"type": "text", "text": "hi"}]}})
    assert index_of(dropped).blank == []
    assert index_of(history).blank == [(0, 0)]  # the old history's index is its own
    moved = history.with_fields({"system": "be brief"})
    assert moved.memoized("index") == (True, index_of(history))


@SETTINGS
@given(
    pattern=st.sampled_from(["[a-zA-Z0-9_-]+", "[a-c]+", "[a^]+", "toolu_[0-9]+", "[ab]*"]),
    ids=st.lists(st.text(alphabet="abc^_-:.0123 toolu\n", max_size=8), max_size=6),
)
def test_the_id_pattern_check_matches_one_id_at_a_time(pattern: str, ids: list[str]) -> None:
    calls = [{"type": "tool_use", "id": x, "name": "f", "input": {}} for x in ids]
    results = [{"type": "tool_result", "tool_use_id": x} for x in reversed(ids)]
    history = Messages(
        [{"role": "assistant", "content": calls}, {"role": "user", "content": results}]
    )
    expected = all(re.fullmatch(pattern, x) for x in ids)
    assert _all_match(pattern, index_of(history)) == expected


_NEW = [
    {"role": "user", "content": "  "},
    {"role": "user", "content": []},
    {"role": "assistant", "content": [{"type": "text", "text": ""}, {"type": "text", "text": "x"}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": CACHE}]},
]


@SETTINGS
@given(
    case=histories(),
    picks=st.lists(st.tuples(st.integers(0, 60), st.sampled_from(range(len(_NEW)))), max_size=4),
    skips=st.lists(st.integers(0, 60), max_size=4),
)
def test_an_edit_carries_the_index_a_fresh_walk_would_build(
    case: tuple[str, Body], picks: list[tuple[int, int]], skips: list[int]
) -> None:
    _, body = case
    history = Messages.of(body)
    n = len(history.messages)
    index_of(history)
    swapped = history.replace({i % n: _NEW[k] for i, k in picks})
    assert index_of(swapped) == build(swapped)
    inserts = {i % n: [(_NEW[k], None)] for i, k in picks}
    edited = history.edited(inserts, {i % n for i in skips})
    assert edited.memoized("index")[0] == bool(edited.messages is not history.messages)
    assert index_of(edited) == build(edited)
