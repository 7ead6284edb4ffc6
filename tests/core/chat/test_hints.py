"""A rule's hint says what its default repair does (issue 37 item 6): ``check --fix`` prints
the hint next to the repaired body, and the two must not disagree (``content_null`` said "Send
'content' as a string" while its fix left the key out)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from proxy.core.policy import build_policy
from tests.factories import sanitize_chat

CALL = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}


class Case(NamedTuple):
    policy: str
    messages: list[dict[str, Any]]
    rule: str
    index: int  # the message the repair changed, in the forwarded history
    said: str  # what the hint says the repair does
    done: Callable[[dict[str, Any]], bool]  # the repair did it


CASES = [
    # Gemini takes the key left out of a tool-call turn (G10): the fix removes it
    Case(
        "gemini",
        [
            {"role": "user", "content": "Read it"},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
        ],
        "content_null",
        1,
        "Leave 'content' out where the upstream takes that",
        lambda m: "content" not in m,
    ),
    # OpenAI refuses null on a user message (O14): the fix sends ""
    Case(
        "openai",
        [{"role": "user", "content": None}, {"role": "user", "content": "hi"}],
        "content_null",
        0,
        'send it as a string ("" when there is nothing to say)',
        lambda m: m["content"] == "",
    ),
    Case(
        "gemini",
        [
            {"role": "user", "content": "Read it"},
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": ""},
        ],
        "empty_text",
        2,
        "a placeholder such as '(empty)'",
        lambda m: m["content"] == "(empty)",
    ),
    Case(
        "openai",
        [
            {"role": "user", "content": "Read it"},
            {"role": "tool", "tool_call_id": "call_9", "content": "x = 1"},
            {"role": "user", "content": "Which?"},
        ],
        "orphan_tool_result",
        1,
        "can only go on as user text naming the call",
        lambda m: m["role"] == "user" and "call_9" in m["content"],
    ),
    Case(
        "gemini",
        [
            {"role": "user", "content": "Read it"},
            {"role": "assistant", "content": "", "tool_calls": [
                {**CALL, "function": {"name": "read", "arguments": '{"path": "a'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
        ],
        "arguments_invalid_json",
        1,
        '{"raw_arguments": ...}',
        lambda m: '"raw_arguments"' in m["tool_calls"][0]["function"]["arguments"],
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}-{c.policy}" for c in CASES])
def test_the_hint_says_what_the_default_repair_does(case: Case) -> None:
    outcome = sanitize_chat(case.messages, build_policy(case.policy))
    found = [f for f in outcome.findings if f.rule == case.rule]
    assert found, outcome.findings
    assert case.said in found[0].hint
    assert outcome.status == "repaired"
    assert case.done(list(outcome.messages)[case.index]), outcome.messages
