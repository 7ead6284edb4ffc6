"""The request bodies the proxy benchmark sends: small, a valid 200-message tool history, a
broken copy of it that makes toolcall-guard repair on the hot path, and the same history as a
Responses API body (``input`` items), clean and broken."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from bench.sanitize import clean_history
from proxy.core.policy import apply_policy, build_policy

Message = dict[str, Any]
MODEL = "gpt-4o-mini"
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"


def small() -> list[Message]:
    """A system prompt and one user question."""
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
    ]


def history() -> list[Message]:
    """200 valid messages: 33 rounds of user, 3 parallel calls, their results and an answer;
    short contents (~31 KB in all, the size issue 17 measured)."""
    messages = clean_history("openai", 20)[:199]  # 1 system + 33 rounds of 6 messages
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


def items(messages: list[Message]) -> list[Message]:
    """Chat messages as Responses ``input`` items: messages, ``function_call`` and
    ``function_call_output`` items (responses-api.md A5)."""
    out: list[Message] = []
    for m in messages:
        if m["role"] == "tool":
            out.append(
                {
                    "type": "function_call_output",
                    "call_id": m["tool_call_id"],
                    "output": m["content"],
                }
            )
            continue
        if m["role"] == "assistant":
            if m.get("content"):
                text = [{"type": "output_text", "text": m["content"], "annotations": []}]
                out.append({"type": "message", "role": "assistant", "content": text})
            for call in m.get("tool_calls", ()):
                fn = call["function"]
                out.append(
                    {
                        "type": "function_call",
                        "call_id": call["id"],
                        "name": fn["name"],
                        "arguments": fn["arguments"],
                    }
                )
            continue
        out.append({"type": "message", "role": m["role"], "content": m["content"]})
    return out


def responses_broken() -> list[Message]:
    """The Responses history with the two pairing breaks seen most (responses-api.md R1, R2):
    calls left without output and outputs whose call is gone."""
    out = items(history())
    calls = [i for i, item in enumerate(out) if item.get("type") == "function_call"]
    outputs = [i for i, item in enumerate(out) if item.get("type") == "function_call_output"]
    for i in sorted(set(calls[7::30]) | set(outputs[3::30]), reverse=True):
        del out[i]
    return out


#: kind -> (path, messages or items, the outcome toolcall-guard should report)
KINDS: dict[str, tuple[str, Any, str]] = {
    "small": (CHAT, small, "clean"),
    "history": (CHAT, history, "clean"),
    "broken": (CHAT, broken, "repaired"),
    "responses": (RESPONSES, lambda: items(history()), "clean"),
    "responses-broken": (RESPONSES, responses_broken, "repaired"),
}


def path(kind: str) -> str:
    return KINDS[kind][0]


def expected(kind: str) -> str:
    return KINDS[kind][2]


def body(kind: str, *, stream: bool) -> bytes:
    """The JSON body for ``kind``; checks the chat sanitizer sees it as the bench intends."""
    where, make, outcome = KINDS[kind]
    history_ = make()
    if where == RESPONSES:
        data: dict[str, Any] = {"model": MODEL, "input": history_, "store": False}
    else:
        status = apply_policy(history_, build_policy("openai")).status
        if status != outcome:
            raise AssertionError(f"the {kind} body is {status}, expected {outcome}")
        data = {"model": MODEL, "messages": history_}
    if stream:
        data["stream"] = True
    return orjson.dumps(data)
