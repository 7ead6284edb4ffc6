"""The Messages rules' invariants, checked against the independent strict Messages emulators.

1. No false positives: a history shaped like Claude Code and the SDKs send it (system as two
   text blocks with ``cache_control``, signed thinking, parallel ``tool_use`` answered first in
   the next user message, ``<system-reminder>`` text after the results, images in results,
   ``server_tool_use`` + ``web_search_tool_result``) that the provider's emulator accepts
   yields no finding and the very same list.
2. Valid out: the broken forms clients are known to send come out accepted by the emulator.
3. Idempotent, pure, nothing lost: sanitizing the output again finds nothing; the input is
   never mutated; every user text and tool output is still in the body sent.
"""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from proxy.core.forward import forwarded_body
from proxy.core.policy import build_policy
from proxy.core.wire import MESSAGES, sanitize_body
from proxy.emulator.messages_validate import validate_messages

Body = dict[str, Any]
MODELS = {
    "anthropic": ["claude-sonnet-4-5", "claude-opus-4-6", "claude-opus-5"],
    "deepseek": ["deepseek-v4-pro", "deepseek-chat"],
    "kimi": ["kimi-k2.5", "kimi-k2-0905-preview"],
    "glm": ["glm-4.6"],
    "minimax": ["MiniMax-M2"],
}
POLICIES = {name: build_policy(name) for name in MODELS}
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CACHE = {"type": "ephemeral"}
SIGNATURE = base64.b64encode(bytes(range(48))).decode()
IMAGE = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
}
words = st.text(alphabet="abcdefghij ", min_size=1, max_size=12).map(lambda s: s.strip() or "x")


@st.composite
def rounds(draw: st.DrawFn, k: int) -> list[Body]:
    """One user request and the model's answer: tool calls answered, or a search, or text."""
    ask = draw(words)
    messages: list[Body] = [
        {"role": "user", "content": draw(st.sampled_from([ask, [{"type": "text", "text": ask}]]))}
    ]
    thinking = {"type": "thinking", "thinking": draw(words), "signature": SIGNATURE}
    kind = draw(st.sampled_from(["tools", "tools", "search", "text"]))
    if kind == "text":
        messages.append(
            {"role": "assistant", "content": [thinking, {"type": "text", "text": draw(words)}]}
        )
        return messages
    if kind == "search":
        sid = f"srvtoolu_{k}a"
        messages.append({"role": "assistant", "content": [
            {"type": "server_tool_use", "id": sid, "name": "web_search", "input": {"query": ask}},
            {"type": "web_search_tool_result", "tool_use_id": sid, "content": []},
            {"type": "text", "text": draw(words)},
        ]})  # fmt: skip
        return messages
    ids = [f"toolu_{k}{c}" for c in "abc"[: draw(st.integers(1, 3))]]
    calls = [{"type": "tool_use", "id": i, "name": "read_file", "input": {"path": i}} for i in ids]
    lead = [thinking] + ([{"type": "text", "text": draw(words)}] if draw(st.booleans()) else [])
    messages.append({"role": "assistant", "content": [*lead, *calls]})
    results: list[Body] = []
    for i in ids:
        content: Any = f"output of {i}"
        if draw(st.integers(0, 3)) == 0:
            content = [{"type": "text", "text": f"output of {i}"}, IMAGE]
        results.append(
            {
                "type": "tool_result",
                "tool_use_id": i,
                "content": content,
                **({"is_error": True} if draw(st.integers(0, 5)) == 0 else {}),
            }
        )
    tail = (
        [{"type": "text", "text": "<system-reminder>todo</system-reminder>"}]
        if draw(st.booleans())
        else []
    )
    messages.append({"role": "user", "content": [*results, *tail]})
    messages.append({"role": "assistant", "content": [{"type": "text", "text": draw(words)}]})
    return messages


@st.composite
def valid_bodies(draw: st.DrawFn, provider: str) -> Body:
    messages: list[Body] = []
    for k in range(draw(st.integers(1, 4))):
        messages += draw(rounds(k))
    messages.append({"role": "user", "content": draw(words)})
    body: Body = {
        "model": draw(st.sampled_from(MODELS[provider])),
        "max_tokens": 4096,
        "system": [
            {"type": "text", "text": "You are Claude Code.", "cache_control": CACHE},
            {"type": "text", "text": "env", "cache_control": CACHE},
        ],
        "tools": [{"name": "read_file", "description": "Read", "input_schema": {"type": "object"}}],
        "messages": messages,
    }
    if draw(st.booleans()):
        body["thinking"] = {"type": "enabled", "budget_tokens": 2048}
    return body


@pytest.mark.parametrize("provider", list(MODELS))
@SETTINGS
@given(data=st.data())
def test_valid_client_histories_are_clean(provider: str, data: st.DataObject) -> None:
    body = data.draw(valid_bodies(provider))
    assume(validate_messages(provider, body) is None)
    outcome = sanitize_body(MESSAGES, body, POLICIES[provider])
    assert outcome.findings == (), [f.as_dict() for f in outcome.findings]
    assert outcome.messages is body["messages"]
    assert not outcome.changed


def _results_turn(messages: list[Body], at: int) -> int | None:
    """The position of one user message starting with tool results, if any."""
    found = [
        i
        for i, m in enumerate(messages)
        if m["role"] == "user"
        and isinstance(m["content"], list)
        and m["content"]
        and m["content"][0]["type"] == "tool_result"
    ]
    return found[at % len(found)] if found else None


def _drop_result(messages: list[Body], i: int) -> None:  # an interrupt: M1
    messages[i]["content"] = messages[i]["content"][1:] or [{"type": "text", "text": "cut"}]


def _drop_call(messages: list[Body], i: int) -> None:  # compaction cut the call: M2
    kept = [b for b in messages[i - 1]["content"] if b["type"] != "tool_use"]
    messages[i - 1]["content"] = kept or [{"type": "text", "text": "..."}]


def _text_first(messages: list[Body], i: int) -> None:  # hook output first: M3
    messages[i]["content"].insert(0, {"type": "text", "text": "hook output"})


def _split(messages: list[Body], i: int) -> None:  # M6
    messages[i : i + 1] = [{"role": "user", "content": [b]} for b in messages[i]["content"]]


def _duplicate(messages: list[Body], i: int) -> None:  # a retry stored twice: M4
    messages[i]["content"].insert(1, dict(messages[i]["content"][0]))


def _empty_text(messages: list[Body], i: int | None) -> None:  # M11
    messages[0]["content"] = [{"type": "text", "text": ""}, {"type": "text", "text": "hi"}]


def _unsigned(messages: list[Body], i: int | None) -> None:  # a relay lost signatures: M18
    for m in messages:
        for b in m["content"] if isinstance(m["content"], list) else []:
            b.pop("signature", None)


def _system(messages: list[Body], i: int | None) -> None:  # Claude Code 2.1.154+: M24
    messages.insert(1, {"role": "system", "content": "Mind the tests."})


#: The broken forms clients send (anthropic-messages.md §4); the first five need a tool turn.
BREAKS = {
    "drop_result": _drop_result,
    "drop_call": _drop_call,
    "text_first": _text_first,
    "split": _split,
    "duplicate": _duplicate,
    "empty_text": _empty_text,
    "unsigned": _unsigned,
    "system": _system,
}
_NEEDS_TURN = ("drop_result", "drop_call", "text_first", "split", "duplicate")


def _break(body: Body, how: str, at: int) -> Body:
    """``body`` broken the way ``how`` names (unchanged when it has no tool turn to break)."""
    broken = copy.deepcopy(body)
    i = _results_turn(broken["messages"], at)
    if i is None and how in _NEEDS_TURN:
        return broken
    BREAKS[how](broken["messages"], i)  # type: ignore[arg-type]
    return broken


def _said(body: Body) -> list[str]:
    """Every user text and tool output of the body (what must reach the upstream)."""
    found = []
    for m in body["messages"]:
        if m["role"] != "user":
            continue
        content = (
            m["content"]
            if isinstance(m["content"], list)
            else [{"type": "text", "text": m["content"]}]
        )
        for b in content:
            if b["type"] == "text" and b["text"].strip():
                found.append(b["text"])
            elif b["type"] == "tool_result":
                found += (
                    [b["content"]]
                    if isinstance(b["content"], str)
                    else [p["text"] for p in b["content"] if p["type"] == "text"]
                )
    return found


@pytest.mark.parametrize("provider", list(MODELS))
@SETTINGS
@given(data=st.data())
def test_broken_histories_come_out_valid_idempotent_and_whole(
    provider: str, data: st.DataObject
) -> None:
    body = data.draw(valid_bodies(provider))
    body["model"] = MODELS[provider][0]  # a model that takes no prefill nor system message
    assume(validate_messages(provider, body) is None)
    broken = _break(body, data.draw(st.sampled_from(list(BREAKS))), data.draw(st.integers(0, 3)))
    snapshot = copy.deepcopy(broken)
    policy = POLICIES[provider]
    outcome = sanitize_body(MESSAGES, broken, policy)
    assert broken == snapshot, "sanitize_body mutated its input"
    assert not outcome.rejected, [f.as_dict() for f in outcome.findings]
    if validate_messages(provider, broken) is not None:
        assert outcome.changed, "the emulator refuses what the sanitizer forwards unchanged"
    fixed = forwarded_body(MESSAGES, broken, outcome)
    rejection = validate_messages(provider, fixed)
    assert rejection is None, (rejection.body, fixed["messages"])
    again = sanitize_body(MESSAGES, fixed, policy)
    assert again.findings == (), [f.as_dict() for f in again.findings]
    sent = json.dumps(fixed, ensure_ascii=False)
    for text in _said(broken):
        assert json.dumps(text, ensure_ascii=False)[1:-1] in sent, text
