"""The Gemini rules' invariants over generated histories.

1. No false positives: a history shaped as gemini-cli, the GenAI SDKs, ADK and the AI SDK send
   it (ids on both sides or on neither, camelCase or snake_case, a real signature on the first
   call of each Gemini 3 step, the dummy on Gemini 2.5 first calls, parallel calls answered in
   call order, cancelled calls answered with ``{"error": …}``, media after or inside a
   response) yields no finding and the very same list, on AI Studio, Vertex and Code Assist.
2. Valid out: the broken forms clients are known to send come out with every call turn right
   after a user or response turn and answered by as many responses (N1-N3, checked here
   independently of the rules), the current turn's steps signed on Gemini 3 (N5), and accepted
   by the strict native emulator of the endpoint.
3. Idempotent, pure, nothing lost: sanitizing the output again finds nothing; the input is
   never mutated; every user text and every response output of the input reaches the output.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.core.engine import sanitize
from proxy.core.gemini.items import Contents
from proxy.core.history import MalformedHistory
from tests.core.gemini.policies import ENDPOINTS, gemini_policy
from tests.core.gemini.test_golden import emulated, forwarded

Body = dict[str, Any]
Part = dict[str, Any]
POLICIES = {name: gemini_policy(name) for name in ENDPOINTS}
MODELS = ["gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview", "gemini-3.1-flash-preview"]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SIGNATURE = "CiQBjz1rX8AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/AAECAwQFBgc="
SKIP = "skip_thought_signature_validator"
PNG = {"mimeType": "image/png", "data": "iVBORw0KGgo="}
words = st.text(alphabet="abcdefghij ", min_size=1, max_size=12).map(lambda s: s.strip() or "x")


def _key(camel: str, snake: bool) -> str:
    return (
        {"functionCall": "function_call", "functionResponse": "function_response"}.get(
            camel, "thought_signature"
        )
        if snake
        else camel
    )


@st.composite
def steps(draw: st.DrawFn, k: int, gemini_3: bool) -> list[Body]:
    """One model step and its answer: parallel calls answered in call order, or text."""
    if draw(st.integers(0, 3)) == 0:
        return [{"role": "model", "parts": [{"text": draw(words)}]}]
    snake, ids = draw(st.booleans()), draw(st.booleans())
    calls, responses = [], []
    for c in range(draw(st.integers(1, 3))):
        call: Part = {"name": f"tool_{c}", "args": {"n": c}}
        response: Part = {"name": f"tool_{c}"}
        if ids:
            call["id"] = response["id"] = f"call-{k}-{c}"
        kind = draw(st.sampled_from(["output", "output", "error", "raw"]))
        out = f"output {k}.{c} {draw(words)}"
        response["response"] = {"result": out, "n": c} if kind == "raw" else {kind: out}
        part: Part = {_key("functionCall", snake): call}
        if c == 0 and (gemini_3 or draw(st.booleans())):
            part[_key("thoughtSignature", snake)] = SIGNATURE if gemini_3 else SKIP
        calls.append(part)
        responses.append({_key("functionResponse", snake): response})
    if draw(st.integers(0, 4)) == 0:
        responses.append({"inlineData": PNG})
    lead = [{"text": draw(words)}] if draw(st.booleans()) else []
    return [{"role": "model", "parts": [*lead, *calls]}, {"role": "user", "parts": responses}]


@st.composite
def valid_bodies(draw: st.DrawFn, endpoint: str) -> tuple[Body, str]:
    model = draw(st.sampled_from(MODELS))
    contents: list[Body] = []
    for k in range(draw(st.integers(1, 3))):
        contents.append({"role": "user", "parts": [{"text": draw(words)}]})
        for s in range(draw(st.integers(1, 3))):
            step = draw(steps(k * 10 + s, model.startswith("gemini-3")))
            contents += step
            if len(step) == 1:
                break  # a text answer ends the round
    if contents[-1]["role"] == "model":
        contents.append({"role": "user", "parts": [{"text": draw(words)}]})
    if endpoint == "code-assist":
        return {"model": model, "project": "p", "request": {"contents": contents}}, ""
    return {"contents": contents, "generationConfig": {"temperature": 0}}, f"models/{model}"


def history_of(body: Body) -> list[Body]:
    found: list[Body] = body["request"]["contents"] if "request" in body else body["contents"]
    return found


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@SETTINGS
@given(data=st.data())
def test_valid_client_histories_are_clean(endpoint: str, data: st.DataObject) -> None:
    body, model = data.draw(valid_bodies(endpoint))
    history = Contents.of(body, model)
    outcome = sanitize(history, POLICIES[endpoint], "gemini")
    assert outcome.findings == (), [f.as_dict() for f in outcome.findings]
    assert outcome.messages is history_of(body)
    assert not outcome.changed
    assert emulated(endpoint, model, body) is None, "the generator makes valid histories"


def _fn(part: Part, camel: str) -> Part | None:
    snake = "function_call" if camel == "functionCall" else "function_response"
    found = part.get(camel, part.get(snake))
    return found if isinstance(found, dict) else None


def _turns(contents: list[Body]) -> list[int]:
    """Positions of the contents holding function responses."""
    return [
        i for i, c in enumerate(contents) if any(_fn(p, "functionResponse") for p in c["parts"])
    ]


def _drop_response(contents: list[Body], i: int) -> None:  # an interrupt (N1)
    contents[i]["parts"] = contents[i]["parts"][1:] or [{"text": "[interrupted]"}]


def _drop_call_turn(contents: list[Body], i: int) -> None:  # compression cut the call (N3)
    del contents[i - 1]


def _split(contents: list[Body], i: int) -> None:  # N15
    contents[i : i + 1] = [{"role": "user", "parts": [p]} for p in contents[i]["parts"]]


def _duplicate(contents: list[Body], i: int) -> None:  # a retry stored twice (N1)
    contents[i]["parts"].insert(1, copy.deepcopy(contents[i]["parts"][0]))


def _unsigned(contents: list[Body], i: int) -> None:  # a model switch lost them (N5)
    for c in contents:
        for p in c["parts"]:
            p.pop("thoughtSignature", None)
            p.pop("thought_signature", None)


def _no_prompt(contents: list[Body], i: int) -> None:  # a side call's history (N2)
    del contents[: i - 1]


def _roles(contents: list[Body], i: int) -> None:  # OpenAI roles (N14)
    contents[i]["role"] = "tool"
    if any(_fn(p, "functionCall") for p in contents[i - 1]["parts"]):
        contents[i - 1]["role"] = "assistant"


def _stream_tail(contents: list[Body], i: int) -> None:  # an empty last chunk kept (N11)
    contents[i - 1]["parts"].append({"text": "", "thoughtSignature": SIGNATURE})


BREAKS = {
    "drop_response": _drop_response,
    "drop_call_turn": _drop_call_turn,
    "split": _split,
    "duplicate": _duplicate,
    "unsigned": _unsigned,
    "no_prompt": _no_prompt,
    "roles": _roles,
    "stream_tail": _stream_tail,
}


def _said(contents: list[Body]) -> list[str]:
    """Every user text and every response output (as JSON) of a history."""
    found = []
    for c in contents:
        for p in c["parts"]:
            response = _fn(p, "functionResponse")
            if response is not None:
                found.append(json.dumps(response["response"], ensure_ascii=False))
            elif c.get("role") != "model" and p.get("text"):
                found.append(p["text"])
    return found


def _valid(contents: list[Body], model: str) -> None:
    """N1-N3 and N5 as an upstream checks them, written apart from the rules."""
    calls = [sum(_fn(p, "functionCall") is not None for p in c["parts"]) for c in contents]
    responses = [sum(_fn(p, "functionResponse") is not None for p in c["parts"]) for c in contents]
    assert calls[0] == 0, "contents start with a call turn"
    for i in range(1, len(contents)):
        if calls[i]:
            assert contents[i - 1]["role"] == "user", f"call turn {i} after a model turn"
        if responses[i]:
            assert responses[i] == calls[i - 1], f"{responses[i]} responses for {calls[i - 1]}"
    start = max(i for i, c in enumerate(contents) if c["role"] == "user" and not responses[i])
    for c in contents[start + 1 :] if "gemini-3" in model else []:
        first = next((p for p in c["parts"] if _fn(p, "functionCall") is not None), None)
        assert first is None or "thoughtSignature" in first or "thought_signature" in first


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@SETTINGS
@given(data=st.data())
def test_broken_histories_come_out_valid_idempotent_and_whole(
    endpoint: str, data: st.DataObject
) -> None:
    body, model = data.draw(valid_bodies(endpoint))
    for how in data.draw(st.lists(st.sampled_from(list(BREAKS)), min_size=1, max_size=2)):
        turns = _turns(history_of(body))
        if turns:
            BREAKS[how](history_of(body), turns[data.draw(st.integers(0, len(turns) - 1))])
    snapshot = copy.deepcopy(body)
    policy = POLICIES[endpoint]
    outcome = sanitize(Contents.of(body, model), policy, "gemini")
    assert body == snapshot, "the engine mutated its input"
    assert not outcome.rejected, [f.as_dict() for f in outcome.findings]
    _valid(outcome.messages, model or body["model"])
    fixed = forwarded(body, outcome.messages)
    assert emulated(endpoint, model, fixed) is None, fixed
    again = sanitize(Contents.of(fixed, model), policy, "gemini")
    assert again.findings == (), [f.as_dict() for f in again.findings]
    sent = json.dumps(fixed, ensure_ascii=False)
    for said in _said(history_of(body)):
        assert said in sent or json.dumps(said, ensure_ascii=False)[1:-1] in sent, said


_KEYS = [
    *("text", "functionCall", "function_call", "functionResponse", "function_response"),
    *("name", "id", "args", "response", "thoughtSignature", "thought_signature", "thought"),
    *("parts", "role", "inlineData", "toolCall", "tool_call_id", "output"),
]
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["", "x", SKIP]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=3)
    ),
    max_leaves=10,
)
_parts = st.lists(st.dictionaries(st.sampled_from(_KEYS), _json, max_size=3), max_size=4)
_roles = st.sampled_from(["user", "model", "assistant", "tool", "function", "system", None])
_contents = st.lists(
    st.fixed_dictionaries({"parts": _parts}, optional={"role": _roles}) | _json, max_size=6
)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contents=_contents)
def test_any_body_is_refused_or_checked_and_settles(endpoint: str, contents: list[Any]) -> None:
    """Whatever the body, the view refuses it (:class:`MalformedHistory`) or the engine checks
    it without an error; a history it forwards is settled (checked again, nothing found)."""
    body: Body = {"contents": contents}
    try:
        history = Contents.of(body, "gemini-3-pro-preview")
    except MalformedHistory:
        return
    outcome = sanitize(history, POLICIES[endpoint], "gemini")
    if outcome.rejected:
        return
    again = sanitize(
        Contents.of(forwarded(body, outcome.messages), "gemini-3-pro-preview"),
        POLICIES[endpoint],
        "gemini",
    )
    assert again.findings == (), [f.as_dict() for f in again.findings]
