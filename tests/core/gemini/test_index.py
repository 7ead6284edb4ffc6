"""The Gemini index (:mod:`proxy.core.gemini.index`) against a fresh, plain computation.

1. The one-pass index holds what a plain walk with the rules' own helpers finds (roles, call
   and response turns and their sizes, the contents out of the ordinary, written here apart
   from the index).
2. Every rule finds exactly what it finds on the same history without the memo (each lookup
   computes afresh) and without the fast exits (:data:`~proxy.core.gemini.index.FAST`), at
   every step of the pipeline, repairs applied: a repaired history never reads an index left
   from the history it came from.
3. The whole sanitizer gives the same outcome with and without the fast exits.
4. :meth:`~proxy.core.gemini.items.Contents.of`, which checks a request's shape in the walk
   that indexes it, refuses exactly what the plain check (:func:`contents_of`) refuses, with
   the same words and place.

The histories are the property tests' (valid gemini-cli-like bodies on every endpoint, broken
the ways clients break them, and any shape at all), plus breaks that reach the rules those do
not: values that are no objects, signatures and ids where they do not belong, empty and
unnamed parts, other APIs' roles, snake_case and media parts, unknown keys.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.core.engine import sanitize
from proxy.core.gemini import index as fast
from proxy.core.gemini import parts as kinds
from proxy.core.gemini.index import index_of, scan
from proxy.core.gemini.items import Contents, contents_of
from proxy.core.gemini.parts import (
    DATA_FIELDS,
    METADATA_FIELDS,
    call_of,
    parts_of,
    response_of,
    role_of,
)
from proxy.core.gemini.rules.common import Pairing, call_id, call_parts, pair, response_parts
from proxy.core.gemini.spelling import snake
from proxy.core.history import MalformedHistory
from proxy.core.rule import Hit
from tests.core.gemini.policies import ENDPOINTS, gemini_policy
from tests.core.gemini.test_properties import (
    _KEYS,
    BREAKS,
    SETTINGS,
    SIGNATURE,
    Body,
    _contents,
    _json,
    _parts,
    _turns,
    history_of,
    valid_bodies,
)

T = TypeVar("T")
#: Every rule on: the presets, and the rules they leave off or scoped to no model.
EVERYTHING = {
    "gemini_response_id": {"action": "copy", "models": ["gemini-3*"]},
    "gemini_call_id": {"action": "strip", "always": True},
    "gemini_foreign_signature": "replace",
}
POLICIES = {
    **{name: gemini_policy(name) for name in ENDPOINTS},
    **{f"{name}+all": gemini_policy(name, EVERYTHING) for name in ENDPOINTS},
}


class Unmemoised(Contents):
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


def _fn(part: Body, camel: str) -> Body | None:
    key = camel if camel in part else snake(camel)
    return part.get(key) if isinstance(part.get(key), dict) else None


def _calls(contents: list[Body], i: int) -> list[Body]:
    """The call objects of the call turn before response turn ``i``."""
    return [c for p in contents[i - 1]["parts"] if (c := _fn(p, "functionCall")) is not None]


def _responses(contents: list[Body], i: int) -> list[Body]:
    """The response objects of response turn ``i``."""
    return [r for p in contents[i]["parts"] if (r := _fn(p, "functionResponse")) is not None]


def _odd_values(contents: list[Body], i: int) -> None:  # N17
    for call in _calls(contents, i)[:1]:
        call["args"] = ["a", 1]
    for response in _responses(contents, i)[-1:]:
        response["response"] = "done"


def _signature_inside(contents: list[Body], i: int) -> None:  # N7
    for call in _calls(contents, i):
        call["thoughtSignature"] = SIGNATURE


def _foreign_ids(contents: list[Body], i: int) -> None:  # N18
    for part in contents[i - 1]["parts"][-1:]:
        part["id"] = "part-level"
    for response in _responses(contents, i):
        response["tool_call_id"] = "call_1"


def _empties(contents: list[Body], i: int) -> None:  # N11, N12
    for response in _responses(contents, i)[:1]:
        response["name"] = ""
    contents[i]["parts"].append({"text": ""})
    contents.insert(i, {"role": "user", "parts": []})


def _other_roles(contents: list[Body], i: int) -> None:  # N14
    contents[0].pop("role", None)
    contents[i - 1]["role"] = "assistant" if i % 2 else "system"


def _odd_keys(contents: list[Body], i: int) -> None:  # both spellings, unknown keys, media
    part = contents[i]["parts"][0]
    part["function_response" if "functionResponse" in part else "extra"] = {"name": "x"}
    contents[i]["parts"].append({"inline_data": {"mime_type": "image/png", "data": "AA=="}})
    contents[i - 1]["parts"].append({"fileData": None, "thought": True})


INDEX_BREAKS = {
    **BREAKS,
    "odd_values": _odd_values,
    "signature_inside": _signature_inside,
    "foreign_ids": _foreign_ids,
    "empties": _empties,
    "other_roles": _other_roles,
    "odd_keys": _odd_keys,
}


@st.composite
def histories(draw: st.DrawFn) -> tuple[str, Body, str]:
    """A policy, a body (valid, broken one way or two, or any shape at all) and its model."""
    policy = draw(st.sampled_from(list(POLICIES)))
    endpoint = policy.split("+")[0]
    if draw(st.integers(0, 4)) == 0:
        contents = draw(_contents)
        return policy, {"contents": contents}, "gemini-3-pro-preview"
    body, model = draw(valid_bodies(endpoint))
    for how in draw(st.lists(st.sampled_from([None, *INDEX_BREAKS]), max_size=2)):
        turns = _turns(history_of(body))
        if how is not None and turns:
            INDEX_BREAKS[how](history_of(body), turns[draw(st.integers(0, len(turns) - 1))])
    return policy, body, model


def _of(body: Body, model: str) -> Contents | None:
    try:
        return Contents.of(body, model)
    except MalformedHistory:
        return None


# --- 1. the index holds what a plain walk finds ----------------------------------------------

_CAMEL = {name: c for c in (*DATA_FIELDS, *METADATA_FIELDS) for name in (c, snake(c))}
_SIGNED_OR_FOREIGN = {"thoughtSignature", "thought_signature", "toolCallId", "tool_call_id"}


def _ordinary(part: Any) -> bool:
    """An ordinary part, as the index's docstring defines one."""
    if not isinstance(part, dict):
        return False
    camels = [_CAMEL.get(key) for key in part]
    data = [key for key in part if _CAMEL.get(key) in DATA_FIELDS]
    if None in camels or len(set(camels)) < len(camels) or len(data) != 1:
        return False
    value, camel = part[data[0]], _CAMEL[data[0]]
    if camel == "text":
        return isinstance(value, str) and value != ""
    if camel not in ("functionCall", "functionResponse"):
        return None not in part.values()
    return isinstance(value, dict) and not _SIGNED_OR_FOREIGN & set(value) and _inner(camel, value)


def _inner(camel: str, value: Body) -> bool:
    if camel == "functionCall":
        return value.get("args") is None or isinstance(value["args"], dict)
    name, response = value.get("name"), value.get("response")
    return isinstance(name, str) and name != "" and (response is None or type(response) is dict)


def _plain_index(contents: list[Body]) -> dict[str, Any]:
    roles = [role_of(c) for c in contents]
    calls = [len(call_parts(c)) for c in contents]
    responses = [len(response_parts(c)) for c in contents]
    call_turns = [i for i, n in enumerate(calls) if n and roles[i] == "model"]
    response_turns = [i for i, n in enumerate(responses) if n and roles[i] == "user"]
    parts = [c.get("parts") if isinstance(c.get("parts"), list) else [] for c in contents]
    return {
        "roles": roles,
        "sent": {c.get("role") for c in contents},
        "call_turns": call_turns,
        "response_turns": response_turns,
        "sizes": {i: calls[i] for i in call_turns} | {i: responses[i] for i in response_turns},
        "unusual": [i for i, ps in enumerate(parts) if not ps or not all(map(_ordinary, ps))],
        "tools": any(calls) or any(responses),
    }


def _as_plain(history: Contents) -> dict[str, Any]:
    index = index_of(history)
    fields = ("roles", "call_turns", "response_turns", "sizes", "unusual", "tools")
    return {"sent": set(index.sent), **{name: getattr(index, name) for name in fields}}


@SETTINGS
@given(case=histories())
def test_the_index_holds_what_a_plain_walk_finds(case: tuple[str, Body, str]) -> None:
    _, body, model = case
    history = _of(body, model)
    if history is None:
        return
    assert _as_plain(history) == _plain_index(history.messages)
    assert index_of(history) is index_of(history)  # one per history
    assert scan(history.messages) == index_of(history)  # seeded by Contents.of: the same
    plain_turns = [i for i in range(len(history)) if index_of(history).is_call_turn(i)]
    assert plain_turns == index_of(history).call_turns


def test_parts_of_one_shape_are_told_alike_first_and_later() -> None:
    """A part's kind is remembered by its keys: the first sighting and the next agree."""
    parts = [
        {"function_call": {"name": "f", "args": {}}, "thought_signature": SIGNATURE},
        {"text": "x", "thought": True},
        {"functionCall": {"name": "f", "args": []}},
        {"inlineData": {"data": "AA=="}, "videoMetadata": None},
    ]
    for part in parts:
        kinds._SHAPES.pop(tuple(part), None)
        contents = [{"role": "model", "parts": [part]}]
        first, again = scan(contents), scan(contents)
        assert first == again
        assert (first.unusual == []) == _ordinary(part), part


# --- 2, 3. the rules with and without the memo and the fast exits -----------------------------


def _fresh(history: Contents) -> Unmemoised:
    return Unmemoised(
        history.messages,
        history.origins,
        history.request,
        model=history.model,
        location=history.location,
    )


def _detect_both(history: Contents, rule: Any, params: Any) -> list[Hit]:
    """The rule's hits on ``history`` (memo, fast exits), checked against a fresh plain run."""
    hits = rule.detect(history, params)
    with plain():
        again = rule.detect(_fresh(history), params)
    assert hits == again, rule.name
    return list(hits)


@SETTINGS
@given(case=histories())
def test_every_rule_finds_what_a_fresh_plain_run_finds(case: tuple[str, Body, str]) -> None:
    name, body, model = case
    history = _of(body, model)
    if history is None:
        return
    for _ in range(3):  # the engine's passes, repairs applied as it applies them
        changed = False
        for rule, setting in POLICIES[name].active["gemini"]:
            if history.tool_free and rule.tools_only:
                assert _detect_both(history, rule, setting.params) == [], rule.name
                continue
            hits = _detect_both(history, rule, setting.params)
            if not hits or any(h.fatal for h in hits) or setting.action not in rule.repairs:
                continue
            repaired = rule.repairs[setting.action](history, hits, setting.params)
            if repaired is not history:
                history, changed = repaired, True
                assert _as_plain(history) == _plain_index(history.messages), rule.name
            if not history.messages:
                return
        if not changed:
            return


@SETTINGS
@given(case=histories())
def test_the_fast_exits_change_no_outcome(case: tuple[str, Body, str]) -> None:
    name, body, model = case
    snapshot = copy.deepcopy(body)
    history = _of(body, model)
    if history is None:
        return
    outcome = sanitize(history, POLICIES[name], "gemini")
    with plain():
        again = sanitize(_fresh(Contents.of(body, model)), POLICIES[name], "gemini")
    assert outcome == again
    assert body == snapshot


# --- 4. the shape check made in the walk ------------------------------------------------------

_anything = st.one_of(
    _json,
    st.lists(_json, max_size=3),
    st.dictionaries(st.sampled_from([*_KEYS, "parts", "role"]), _json, max_size=3),
    st.fixed_dictionaries({"parts": _parts}, optional={"role": _json}),
    st.fixed_dictionaries({"parts": st.lists(_json, max_size=3)}),
)


@st.composite
def near_valid(draw: st.DrawFn) -> list[Any]:
    """A valid history with one role, parts list, part or call swapped for any value."""
    body, _ = draw(valid_bodies("gemini"))
    contents: list[Any] = body["contents"]
    k = draw(st.integers(0, len(contents) - 1))
    where = draw(st.sampled_from(["role", "parts", "part", "call", "content"]))
    value = draw(_anything)
    if where in ("role", "parts"):
        contents[k][where] = value
    elif where == "part":
        contents[k]["parts"][-1] = value
    elif where == "call":
        contents[k]["parts"][-1] = {draw(st.sampled_from(_KEYS[1:5])): value}
    else:
        contents[k] = value
    return contents


@SETTINGS
@given(
    contents=st.one_of(_contents, st.lists(_anything, max_size=4), near_valid()),
    wrap=st.booleans(),
)
def test_contents_of_refuses_what_the_plain_check_refuses(contents: Any, wrap: bool) -> None:
    body = (
        {"model": "gemini-3-pro-preview", "request": {"contents": contents}}
        if wrap
        else {"contents": contents}
    )
    try:
        contents_of(body)
    except MalformedHistory as error:
        refused: MalformedHistory | None = error
    else:
        refused = None
    if refused is None:
        history = Contents.of(body)
        assert _as_plain(history) == _plain_index(history.messages)
        return
    with pytest.raises(MalformedHistory) as walked:
        Contents.of(body)
    assert (str(walked.value), walked.value.path) == (str(refused), refused.path)


@pytest.mark.parametrize(
    ("contents", "where"),
    [
        ([{"role": "user", "parts": [{"text": "a"}]}, "x"], "contents[1]"),
        ([{"role": 1, "parts": [{"text": "a"}]}], "contents[0].role"),
        ([{"role": "user", "parts": {"text": "a"}}], "contents[0].parts"),
        ([{"role": "user", "parts": [{"text": "a"}, ["text"]]}], "contents[0].parts[1]"),
        ([{"parts": [{"functionCall": "f"}]}, {"role": 2}], "contents[0].parts[0].functionCall"),
        ([{"parts": [{"text": "a"}]}, {"parts": [{"function_response": 1}]}], "contents[1]."),
    ],
)
def test_the_first_malformed_content_is_named(contents: list[Any], where: str) -> None:
    with pytest.raises(MalformedHistory) as error:
        Contents.of({"contents": contents})
    assert str(error.value.path).startswith(where)
    with pytest.raises(MalformedHistory) as plain_error:
        contents_of({"contents": contents})
    assert error.value.path == plain_error.value.path


@pytest.mark.parametrize("value", [None, "f", [], {}, {"args": 1}])
@pytest.mark.parametrize("key", ["functionCall", "function_call", "functionResponse"])
def test_a_call_or_response_of_another_type_is_read_as_the_helpers_read_it(
    key: str, value: Any
) -> None:
    contents = [{"role": "model", "parts": [{"text": "x"}, {key: value}]}]
    try:
        contents_of({"contents": contents})
    except MalformedHistory:
        with pytest.raises(MalformedHistory):
            Contents.of({"contents": contents})
        return
    history = Contents.of({"contents": contents})
    assert _as_plain(history) == _plain_index(contents)


def test_a_repair_gets_a_fresh_index() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}, {"text": ""}]}]}
    history = Contents.of(body)
    assert index_of(history).unusual == [0]
    fixed = history.replace({0: {"role": "user", "parts": [{"text": "hi"}]}})
    assert index_of(fixed).unusual == []
    assert index_of(history).unusual == [0]  # the old history's index is its own


def _pair_by_scanning(calls: Body, responses: Body | None) -> Pairing:
    """:func:`pair` as it was first written: each response looks through the open calls."""
    cparts, rparts = parts_of(calls), parts_of(responses) if responses is not None else []
    cs = [(j, call_of(cparts[j]) or {}) for j in call_parts(calls)]
    rs = [(j, response_of(rparts[j]) or {}) for j in response_parts(responses or {})]
    found = Pairing()
    open_calls = list(cs)
    left: list[int] = []
    for j, response in rs:
        rid = call_id(response)
        match = next((c for c in open_calls if rid and call_id(c[1]) == rid), None)
        if match is None:
            left.append(j)
            continue
        open_calls.remove(match)
        found.pairs.append((match[0], j))
    found.pairs += list(zip((j for j, _ in open_calls), left, strict=False))
    found.extra = left[len(open_calls) :]
    found.missing = [j for j, _ in open_calls[len(left) :]]
    found.pairs.sort()
    return found


_ids = st.sampled_from([None, "", "a", "b", "c", 7])
_fn_parts = st.lists(
    st.one_of(
        st.builds(lambda i: {"functionCall": {"name": "f", "id": i}}, _ids),
        st.builds(lambda i: {"function_call": {"id": i}}, _ids),
        st.builds(lambda i: {"functionResponse": {"name": "f", "id": i}}, _ids),
        st.builds(lambda i: {"function_response": {"id": i}}, _ids),
        st.just({"text": "x"}),
        st.just({"functionCall": None}),
    ),
    max_size=7,
)


@SETTINGS
@given(calls=_fn_parts, responses=st.none() | _fn_parts)
def test_pairing_by_id_finds_what_a_scan_of_the_open_calls_finds(
    calls: list[Body], responses: list[Body] | None
) -> None:
    turn = {"role": "model", "parts": calls}
    answer = None if responses is None else {"role": "user", "parts": responses}
    assert pair(turn, answer) == _pair_by_scanning(turn, answer)
