"""The Messages fast exits against the plain code they stand for, on the histories that reach
their edges (the pipeline's own order repairs most of these before the exit sees them, so the
rule-by-rule comparison of ``test_index.py`` alone would not).

1. Pairing read as whole columns (:func:`~proxy.core.messages.rules.turns._in_order`) finds
   what the scan finds, merging or not, on histories shuffled the ways the columns could miss:
   ids used twice, roles swapped (one, or all: calls in user messages), results moved, split,
   after text or in a system message.
2. Signatures checked in one match, ids in one concatenation: the same verdict as one check
   per block or per id.
3. An edit's index moved run by run (:func:`~proxy.core.messages.carry.moved`, whatever the
   number of runs) is the index a fresh walk builds.
4. Shapes the walk cannot index (a block whose type is an object) are a malformed history
   naming the place, not a crash.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.core.messages.carry import moved
from proxy.core.messages.index import build, index_of, walk
from proxy.core.messages.items import Messages
from proxy.core.messages.rules.ids import _all_match
from proxy.core.messages.rules.thinking import _all_signed, _unsigned
from proxy.core.messages.rules.turns import _pair
from proxy.core.wire import MESSAGES, sanitize_body
from proxy.errors import MalformedHistory
from tests.core.messages.test_index import Unmemoised, plain
from tests.core.messages.test_properties import MODELS, POLICIES, SETTINGS, Body, valid_bodies

# --- 1. pairing --------------------------------------------------------------------------------


def _located(messages: list[Body], kind: str) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, m in enumerate(messages)
        if isinstance(m["content"], list)
        for j, b in enumerate(m["content"])
        if b["type"] == kind
    ]


def _reuse_id(messages: list[Body], k: int) -> None:
    """A call takes the id of the call before it, and so does its result (order kept)."""
    calls, results = _located(messages, "tool_use"), _located(messages, "tool_result")
    if len(calls) < 2 or len(results) != len(calls):
        return
    n = 1 + k % (len(calls) - 1)
    (pi, pj), (ci, cj), (ri, rj) = calls[n - 1], calls[n], results[n]
    same = messages[pi]["content"][pj]["id"]
    messages[ci]["content"][cj]["id"] = same
    messages[ri]["content"][rj]["tool_use_id"] = same


def _flip_role(messages: list[Body], k: int) -> None:
    m = messages[k % len(messages)]
    m["role"] = "assistant" if m["role"] == "user" else "user"


def _move_result(messages: list[Body], k: int) -> None:
    results = _located(messages, "tool_result")
    if not results:
        return
    i, j = results[k % len(results)]
    block = messages[i]["content"].pop(j)
    target = messages[(i + k) % len(messages)]
    if isinstance(target["content"], str):
        target["content"] = [{"type": "text", "text": target["content"]}]
    target["content"].insert(k % (len(target["content"]) + 1), block)


def _split_results(messages: list[Body], k: int) -> None:
    """The results of one user message split over two user messages in a row."""
    holders = sorted({i for i, _ in _located(messages, "tool_result")})
    if not holders:
        return
    i = holders[k % len(holders)]
    content = messages[i]["content"]
    cut = 1 + k % len(content) if len(content) > 1 else 1
    messages[i]["content"] = content[:cut]
    messages.insert(i + 1, {"role": "user", "content": content[cut:] or "and"})


def _text_before(messages: list[Body], k: int) -> None:
    holders = sorted({i for i, _ in _located(messages, "tool_result")})
    if holders:
        messages[holders[k % len(holders)]]["content"].insert(0, {"type": "text", "text": "x"})


def _flip_all(messages: list[Body], k: int) -> None:
    """Every user message an assistant one and back (turns still alternate)."""
    for m in messages:
        m["role"] = "assistant" if m["role"] == "user" else "user"


def _results_as_system(messages: list[Body], k: int) -> None:
    holders = sorted({i for i, _ in _located(messages, "tool_result")})
    if holders:
        messages[holders[k % len(holders)]]["role"] = "system"


EDITS = {
    "flip_all": _flip_all,
    "results_as_system": _results_as_system,
    "reuse_id": _reuse_id,
    "flip_role": _flip_role,
    "move_result": _move_result,
    "split_results": _split_results,
    "text_before": _text_before,
}


@st.composite
def shuffled(draw: st.DrawFn) -> Body:
    body = copy.deepcopy(draw(valid_bodies(draw(st.sampled_from(list(MODELS))))))
    for name in draw(st.lists(st.sampled_from(list(EDITS)), max_size=3)):
        EDITS[name](body["messages"], draw(st.integers(0, 50)))
    return body


@SETTINGS
@given(body=shuffled(), merges=st.booleans())
def test_pairing_in_order_finds_what_the_scan_finds(body: Body, merges: bool) -> None:
    history = Messages.of(body)
    found = _pair(history, merges)
    with plain():
        again = _pair(Unmemoised(history.messages, history.origins, history.request), merges)
    assert found == again


@SETTINGS
@given(body=shuffled())
def test_shuffled_histories_come_out_the_same_with_and_without_the_fast_exits(body: Body) -> None:
    for policy in POLICIES.values():
        outcome = sanitize_body(MESSAGES, body, policy)
        with plain():
            assert sanitize_body(MESSAGES, body, policy) == outcome


def test_ids_used_twice_in_order_are_no_usual_order() -> None:
    calls = [{"type": "tool_use", "id": "t", "name": "f", "input": {}} for _ in range(2)]
    results = [{"type": "tool_result", "tool_use_id": "t", "content": "ok"} for _ in range(2)]
    history = Messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": calls},
            {"role": "user", "content": results},
        ]
    )
    assert _pair(history, True).duplicates == [(2, 1)]


# --- 2. one match for many -------------------------------------------------------------------

SIGNATURE_CHARS = "AZaz09+/_-=\n. "
signatures = st.one_of(
    st.text(alphabet=SIGNATURE_CHARS, min_size=28, max_size=40),
    st.sampled_from(
        ["A" * 32, "A" * 31, "A" * 30 + "==", "A" * 20 + "\n" + "B" * 20, "A" * 33 + "=" * 3]
    ),
    st.none(),
    st.integers(),
)


@SETTINGS
@given(values=st.lists(signatures, max_size=5))
def test_signatures_in_one_match_say_what_one_check_a_block_says(values: list[Any]) -> None:
    blocks = [{"type": "thinking", "thinking": "t", "signature": v} for v in values]
    assert _all_signed(blocks) == (not any(_unsigned(b) for b in blocks))


ids = st.lists(st.text(alphabet="ab_:.-9 ", max_size=6), max_size=4)


@SETTINGS
@given(pattern=st.sampled_from(["[a-zA-Z0-9_-]+", "[ab]+", "toolu_[0-9]+"]), calls=ids, answers=ids)
def test_ids_of_calls_and_of_results_are_all_checked(
    pattern: str, calls: list[str], answers: list[str]
) -> None:
    history = Messages(
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": x, "name": "f", "input": {}} for x in calls],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": x} for x in answers],
            },
        ]
    )
    expected = all(re.fullmatch(pattern, x) for x in calls + answers)
    assert _all_match(pattern, index_of(history)) == expected


# --- 3. an edit's index, moved run by run ----------------------------------------------------

NEW = [
    {"role": "user", "content": " "},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "n", "name": "", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "n", "content": "ok"}]},
    {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "x"}}]},
]


@SETTINGS
@given(
    body=shuffled(),
    picks=st.lists(st.tuples(st.integers(0, 60), st.sampled_from(range(len(NEW)))), max_size=6),
    skips=st.lists(st.integers(0, 60), max_size=6),
)
def test_an_index_moved_run_by_run_is_a_fresh_walk(
    body: Body, picks: list[tuple[int, int]], skips: list[int]
) -> None:
    history = Messages.of(body)
    n = len(history.messages)
    inserts = {i % n: [(NEW[k], None)] for i, k in picks}
    edited = history.edited(inserts, {i % n for i in skips})
    runs = _runs(n, inserts, {i % n for i in skips})
    assert moved(index_of(history), edited.messages, runs) == build(edited)


def _runs(n: int, inserts: dict[int, Any], skipped: set[int]) -> list[tuple[int, int, int]]:
    """The runs :meth:`~proxy.core.history.CopyOnWrite.edited` copies (as it finds them)."""
    runs, start, size = [], 0, 0
    for point in [*sorted(skipped | set(inserts)), n]:
        end = min(point if point in skipped else point + 1, n)
        if end > start:
            runs.append((start, end, size))
            size += end - start
        size += len(inserts.get(point, ())) if point < n else 0
        start = point + 1
    return runs


# --- 4. shapes the walk cannot index ---------------------------------------------------------


@pytest.mark.parametrize("kind", [{"a": 1}, ["text"]])
def test_a_block_type_that_is_no_key_is_a_malformed_history(kind: Any) -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": kind}]},
    ]
    with pytest.raises(MalformedHistory) as raised:
        walk(messages)
    assert raised.value.args[0] == "messages[1].content[1].type: Field required (a string)."


def test_a_server_result_whose_id_is_an_object_is_an_orphan() -> None:
    result = {"type": "web_search_tool_result", "tool_use_id": {"id": "x"}, "content": []}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [
            {"role": "user", "content": "find"},
            {"role": "assistant", "content": [result, {"type": "text", "text": "done"}]},
            {"role": "user", "content": "thanks"},
        ],
    }
    outcome = sanitize_body(MESSAGES, body, POLICIES["anthropic"])
    assert [f.rule for f in outcome.findings] == ["messages_orphan_server_tool_result"]
