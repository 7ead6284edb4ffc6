"""Shared builders: valid tool-calling histories and the ways agents break them.

The hypothesis strategies here generate histories the way agents build them (turns of user
text, assistant tool calls answered by tool messages, final answers), made valid for one
provider, and then broken in the ways provider-rules.md §5 lists.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from proxy.core.engine import Outcome
from proxy.core.policy import Policy
from proxy.core.wire import CHAT, sanitize_body

Message = dict[str, Any]
DIALECTS = ("openai", "deepseek", "gemini")
#: The strictest model of each emulator: thinking mode for DeepSeek, thought signatures for Gemini.
MODELS = {"openai": "gpt-4o", "deepseek": "deepseek-reasoner", "gemini": "gemini-3-pro-preview"}
SIGNATURE = {"google": {"thought_signature": "skip_thought_signature_validator"}}


def places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside the JSON value ``value`` (keys and list positions), itself
    first: where a property test swaps or drops one value."""
    found = [path]
    if type(value) is dict:
        for key, inner in value.items():
            found += places(inner, (*path, key))
    elif type(value) is list:
        for k, inner in enumerate(value):
            found += places(inner, (*path, k))
    return found


def swapped(value: Any, pick: int, new: Any, drop: bool) -> Any:
    """A deep copy of the JSON value ``value`` with one value inside it (the ``pick``-th of
    :func:`places`, never ``value`` itself) replaced by ``new``, or dropped from its object."""
    out = copy.deepcopy(value)
    spots = places(out)[1:]
    *parent_path, last = spots[pick % len(spots)]
    parent: Any = out
    for step in parent_path:
        parent = parent[step]
    if drop and type(parent) is dict:
        del parent[last]
    else:
        parent[last] = new
    return out


def sanitize_chat(
    messages: list[Message], policy: Policy, request: dict[str, Any] | None = None
) -> Outcome:
    """Chat ``messages`` checked under ``policy`` the way the proxy checks them: the engine
    over the body ``request`` (the rest of the request: ``model``, ``thinking``…) with them."""
    return sanitize_body(CHAT, {**(request or {}), "messages": messages}, policy)


texts = st.text(alphabet="abcdefghij klmnop.,", min_size=1, max_size=30).filter(str.strip)
tool_names = st.sampled_from(["read_file", "write_file", "search", "get_weather"])


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """A provider-neutral valid history (OpenAI shape, string contents everywhere)."""
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(texts)})
    turns = draw(st.integers(1, 3))
    for turn in range(turns):
        messages.append({"role": "user", "content": draw(texts)})
        for step in range(draw(st.integers(0, 2))):
            ids = [f"call_{turn}_{step}_{k}" for k in range(draw(st.integers(1, 4)))]
            calls = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": draw(tool_names), "arguments": '{"path": "a.txt"}'},
                }
                for call_id in ids
            ]
            messages.append({"role": "assistant", "content": draw(texts), "tool_calls": calls})
            messages.extend(
                {"role": "tool", "tool_call_id": c["id"], "content": draw(texts)} for c in calls
            )
        if turn < turns - 1 or draw(st.booleans()):
            messages.append({"role": "assistant", "content": draw(texts)})
    return messages


def for_dialect(messages: list[Message], dialect: str) -> list[Message]:
    """Make a neutral valid history valid for ``dialect``'s strictest model, too."""
    out = copy.deepcopy(messages)
    names = {c["id"]: c["function"]["name"] for m in out for c in m.get("tool_calls", [])}
    last_user = max(i for i, m in enumerate(out) if m["role"] == "user")
    for i, message in enumerate(out):
        if dialect == "deepseek" and "tool_calls" in message:
            message["reasoning_content"] = ""
        if dialect == "gemini" and message["role"] == "tool":
            message["name"] = names[message["tool_call_id"]]
        if dialect == "gemini" and "tool_calls" in message and i > last_user:
            message["tool_calls"][0]["extra_content"] = copy.deepcopy(SIGNATURE)
    return out


def body(messages: list[Message], dialect: str) -> dict[str, Any]:
    return {"model": MODELS[dialect], "messages": messages}


# --- corruptions: each takes a valid history and an index drawn by hypothesis ----------------


def _pick(messages: list[Message], pred: Callable[[Message], bool], n: int) -> int | None:
    found = [i for i, m in enumerate(messages) if pred(m)]
    return found[n % len(found)] if found else None


def lose_tool_calls(m: list[Message], n: int) -> None:
    """Seed 000: the assistant message was saved without its tool_calls."""
    i = _pick(m, lambda x: "tool_calls" in x, n)
    if i is not None:
        del m[i]["tool_calls"]


def drop_result(m: list[Message], n: int) -> None:
    """Seed 003: 3 of 4 parallel calls executed."""
    i = _pick(m, lambda x: x["role"] == "tool", n)
    if i is not None:
        del m[i]


def duplicate_result(m: list[Message], n: int) -> None:
    i = _pick(m, lambda x: x["role"] == "tool", n)
    if i is not None:
        m.insert(i + 1, copy.deepcopy(m[i]))


def trim_head(m: list[Message], n: int) -> None:
    """Seed 001: compaction keeps a tail that starts inside a tool chain."""
    i = _pick(m, lambda x: x["role"] == "tool", n)
    if i is not None:
        del m[:i]


def dict_arguments(m: list[Message], n: int) -> None:
    """Seed 002: arguments stored as a dict."""
    i = _pick(m, lambda x: bool(x.get("tool_calls")), n)
    if i is not None:
        m[i]["tool_calls"][0]["function"]["arguments"] = {"path": "a.txt"}


def null_content(m: list[Message], n: int) -> None:
    m[n % len(m)]["content"] = None


def developer_role(m: list[Message], n: int) -> None:
    i = _pick(m, lambda x: x["role"] == "system", n)
    if i is not None:
        m[i]["role"] = "developer"


def stray_fields(m: list[Message], n: int) -> None:
    m[n % len(m)]["timestamp"] = 1700000000
    i = _pick(m, lambda x: bool(x.get("tool_calls")), n)
    if i is not None:
        m[i]["tool_calls"][0]["index"] = 0


def result_after_user(m: list[Message], n: int) -> None:
    """A result moved after the next user message (gptme#3421 in reverse)."""
    i = _pick(m, lambda x: x["role"] == "tool", n)
    if i is not None:
        m.append(m.pop(i))


def note_between(m: list[Message], n: int) -> None:
    """A system note inserted between a call and its results (gptme#3421)."""
    i = _pick(m, lambda x: "tool_calls" in x, n)
    if i is not None:
        m.insert(i + 1, {"role": "system", "content": "lint: 2 warnings"})


def long_ids(m: list[Message], n: int) -> None:
    """Ids minted by another gateway, over OpenAI's 40 characters."""
    for message in m:
        for call in message.get("tool_calls", []):
            call["id"] = "ws_" + call["id"] * 6
        if message["role"] == "tool":
            message["tool_call_id"] = "ws_" + message["tool_call_id"] * 6


def empty_tool_calls(m: list[Message], n: int) -> None:
    i = _pick(m, lambda x: x["role"] == "assistant" and "tool_calls" not in x, n)
    if i is not None:
        m[i]["tool_calls"] = []


def tool_content_object(m: list[Message], n: int) -> None:
    i = _pick(m, lambda x: x["role"] == "tool", n)
    if i is not None:
        m[i]["content"] = {"ok": True, "lines": 3}


def text_parts(m: list[Message], n: int) -> None:
    i = _pick(m, lambda x: x["role"] == "user" and type(x.get("content")) is str, n)
    if i is not None:
        m[i]["content"] = [{"type": "text", "text": m[i]["content"] or "x"}]


def strip_signatures(m: list[Message], n: int) -> None:
    for message in m:
        for call in message.get("tool_calls", []):
            call.pop("extra_content", None)
        message.pop("reasoning_content", None)
        if message["role"] == "tool":
            message.pop("name", None)


CORRUPTIONS = [
    lose_tool_calls,
    drop_result,
    duplicate_result,
    trim_head,
    dict_arguments,
    null_content,
    developer_role,
    stray_fields,
    result_after_user,
    note_between,
    long_ids,
    empty_tool_calls,
    tool_content_object,
    text_parts,
    strip_signatures,
]


@st.composite
def broken_histories(draw: st.DrawFn, dialect: str) -> list[Message]:
    """A history valid for ``dialect``, then broken 1 to 3 times in the ways agents break them."""
    messages = for_dialect(draw(histories()), dialect)
    for corruption in draw(st.lists(st.sampled_from(CORRUPTIONS), min_size=1, max_size=3)):
        corruption(messages, draw(st.integers(0, 50)))
        if not messages:
            messages.append({"role": "user", "content": "hello"})
    return messages
