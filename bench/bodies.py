"""The request bodies the proxy benchmark sends: small, a valid 200-message tool history, a
broken copy of it that makes toolcall-guard repair on the hot path, and the same history as a
Responses API body (``input`` items) and as an Anthropic Messages body (content blocks), clean
and broken."""

from __future__ import annotations

import copy
from typing import Any

import orjson

from bench.sanitize import clean_history
from proxy.core.policy import build_policy
from proxy.core.wire import CHAT as WIRE_CHAT
from proxy.core.wire import GEMINI as WIRE_GEMINI
from proxy.core.wire import MESSAGES as WIRE_MESSAGES
from proxy.core.wire import sanitize_body

Message = dict[str, Any]
MODEL = "gpt-4o-mini"
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
#: By path prefix to the bench proxy's anthropic upstream (its policy); the fake upstream and
#: the floors answer any path ending in /messages.
MESSAGES = "/anthropic/v1/messages"
CLAUDE = "claude-sonnet-4-5"
#: By path prefix to the bench proxy's gemini upstream (Gemini's native API, the version in
#: the path); the fake upstream answers any path ending in :generateContent.
GEMINI = "/gemini/v1beta/models/gemini-2.5-flash:generateContent"


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


def blocks(messages: list[Message]) -> tuple[str, list[Message]]:
    """Chat messages as an Anthropic Messages history: the system prompt on its own, assistant
    text and ``tool_use`` blocks, each run of tool results one user message of
    ``tool_result`` blocks (anthropic-messages.md §1)."""
    system, out = "", []
    for m in messages:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "tool":
            _add_result(out, m)
        elif m["role"] == "assistant":
            out.append({"role": "assistant", "content": _assistant_blocks(m)})
        else:
            out.append({"role": "user", "content": [{"type": "text", "text": m["content"]}]})
    return system, out


def _add_result(out: list[Message], tool: Message) -> None:
    result = {"type": "tool_result", "tool_use_id": tool["tool_call_id"]}
    result["content"] = tool["content"]
    last = out[-1] if out else None
    if last is not None and last["role"] == "user" and last["content"][0]["type"] == "tool_result":
        last["content"].append(result)
    else:
        out.append({"role": "user", "content": [result]})


def _assistant_blocks(message: Message) -> list[Message]:
    content = [{"type": "text", "text": message["content"]}] if message.get("content") else []
    for call in message.get("tool_calls", ()):
        fn = call["function"]
        use = {"type": "tool_use", "id": call["id"], "name": fn["name"]}
        content.append({**use, "input": orjson.loads(fn["arguments"])})
    return content


def messages_broken() -> tuple[str, list[Message]]:
    """The Messages history with the breaks its clients produce most (anthropic-messages.md §4):
    empty text blocks, and tool_result blocks dropped after an interrupt (a tool_use left
    without its result)."""
    system, out = blocks(history())
    users = [m for m in out if m["role"] == "user" and m["content"][0]["type"] == "text"]
    for message in users[::6]:
        message["content"].insert(0, {"type": "text", "text": ""})
    results = [m for m in out if m["content"] and m["content"][0]["type"] == "tool_result"]
    for message in results[2::10]:
        del message["content"][-1]
    return system, out


def contents(messages: list[Message]) -> tuple[str, list[Message]]:
    """Chat messages as a Gemini-native history: the system prompt on its own, assistant text
    and ``functionCall`` parts in ``model`` contents, each run of tool results one ``user``
    content of ``functionResponse`` parts, with ids as gemini-cli sends them
    (gemini-native.md §1.2, §4)."""
    system, out, names = "", [], {}
    for m in messages:
        if m["role"] == "system":
            system = m["content"]
        elif m["role"] == "tool":
            answer = {"id": m["tool_call_id"], "name": names[m["tool_call_id"]]}
            part = {"functionResponse": {**answer, "response": {"output": m["content"]}}}
            if out and out[-1]["role"] == "user" and "functionResponse" in out[-1]["parts"][0]:
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
        elif m["role"] == "assistant":
            parts = [{"text": m["content"]}] if m.get("content") else []
            for call in m.get("tool_calls", ()):
                fn = call["function"]
                names[call["id"]] = fn["name"]
                args = orjson.loads(fn["arguments"])
                parts.append({"functionCall": {"id": call["id"], "name": fn["name"], "args": args}})
            out.append({"role": "model", "parts": parts})
        else:
            out.append({"role": "user", "parts": [{"text": m["content"]}]})
    return system, out


def gemini_broken() -> tuple[str, list[Message]]:
    """The Gemini history with the break gemini-cli sessions get stuck on (N1): responses lost
    after an interrupt, a call turn left with fewer responses than calls."""
    system, out = contents(history())
    responses = [c for c in out if "functionResponse" in c["parts"][0]]
    for content in responses[2::10]:
        del content["parts"][-1]
    return system, out


#: kind -> (path, messages or items, the outcome toolcall-guard should report)
KINDS: dict[str, tuple[str, Any, str]] = {
    "small": (CHAT, small, "clean"),
    "history": (CHAT, history, "clean"),
    "broken": (CHAT, broken, "repaired"),
    "responses": (RESPONSES, lambda: items(history()), "clean"),
    "responses-broken": (RESPONSES, responses_broken, "repaired"),
    "messages": (MESSAGES, lambda: blocks(history()), "clean"),
    "messages-broken": (MESSAGES, messages_broken, "repaired"),
    "gemini": (GEMINI, lambda: contents(history()), "clean"),
    "gemini-broken": (GEMINI, gemini_broken, "repaired"),
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
    elif where == GEMINI:
        system, history_ = history_
        data = {"systemInstruction": {"parts": [{"text": system}]}, "contents": history_}
        outcome_ = sanitize_body(WIRE_GEMINI, data, build_policy("gemini")).status
        _expect(kind, outcome_, outcome)
        return orjson.dumps(data)  # the path says whether it streams
    elif where == MESSAGES:
        system, messages = history_
        data = {"model": CLAUDE, "max_tokens": 1024, "system": system, "messages": messages}
        _expect(kind, sanitize_body(WIRE_MESSAGES, data, build_policy("anthropic")).status, outcome)
    else:
        data = {"model": MODEL, "messages": history_}
        _expect(kind, sanitize_body(WIRE_CHAT, data, build_policy("openai")).status, outcome)
    if stream:
        data["stream"] = True
    return orjson.dumps(data)


def _expect(kind: str, status: str, outcome: str) -> None:
    """The sanitizer must see the body as the bench intends."""
    if status != outcome:
        raise AssertionError(f"the {kind} body is {status}, expected {outcome}")
