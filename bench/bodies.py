"""The request bodies the proxy benchmark sends: small, a valid 200-message tool history, and a
broken copy of it that makes toolcall-guard repair on the hot path."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from bench.sanitize import clean_history
from proxy.core.policy import apply_policy, build_policy

Message = dict[str, Any]
MODEL = "gpt-4o-mini"


def small() -> list[Message]:
    """A system prompt and one user question."""
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
    ]


def history() -> list[Message]:
    """200 valid messages: 33 rounds of user, 3 parallel calls, their results and an answer."""
    messages = clean_history("openai")[:199]  # 1 system + 33 rounds of 6 messages
    messages.append({"role": "user", "content": "And now summarise what you found."})
    return messages


def broken() -> list[Message]:
    """:func:`history` with the usual damage: lost ``tool_calls`` (their results become
    orphans), dict ``arguments``, a stray ``timestamp`` field and unanswered calls."""
    messages = copy.deepcopy(history())
    callers = [i for i, m in enumerate(messages) if "tool_calls" in m]
    for n, i in enumerate(callers[::8]):
        if n % 3 == 0:
            del messages[i]["tool_calls"]
        elif n % 3 == 1:
            messages[i]["tool_calls"][0]["function"]["arguments"] = {"path": "a"}
        else:
            messages[i]["timestamp"] = 1700000000
    tools = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    for i in reversed(tools[5::40]):
        del messages[i]
    return messages


KINDS = {"small": small, "history": history, "broken": broken}
EXPECTED = {"small": "clean", "history": "clean", "broken": "repaired"}


def body(kind: str, *, stream: bool) -> bytes:
    """The JSON body for ``kind``; checks the sanitizer sees it as the bench intends."""
    messages = KINDS[kind]()
    status = apply_policy(messages, build_policy("openai")).status
    if status != EXPECTED[kind]:
        raise AssertionError(f"the {kind} body is {status}, expected {EXPECTED[kind]}")
    data: dict[str, Any] = {"model": MODEL, "messages": messages}
    if stream:
        data["stream"] = True
    return orjson.dumps(data)
