"""The rule about the shape of each tool call: its id, type and function name.

It runs after the role rules and before pairing, so that pairing sees every call with a string
id. The detector first proves a clean history clean in one pass over all its calls
(:func:`.views.call_facts`), and only then runs the precise checks that name each
violation. :func:`kind` and :func:`compact` serve the other shape rules too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import orjson

from proxy.core.chat.messages import History, Message, call_id, stable_id, tool_calls_of
from proxy.core.chat.rules import views
from proxy.core.providers import provider_of
from proxy.core.rule import Hit, Params, rule

_KIND = {dict: "an object", list: "an array", bool: "a boolean", int: "a number", float: "a number"}


def kind(value: Any) -> str:
    """What a JSON value is, for details: ``null``, ``an object``, ``a number``…"""
    return "null" if value is None else _KIND.get(type(value), type(value).__name__)


def compact(value: Any) -> str:
    """``value`` as compact JSON, the way the SDKs encode arguments."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        # orjson stops at 255 nesting levels and 64-bit integers; json knows neither limit.
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def _new_id(origin: int | None, position: int) -> str:
    return stable_id("tool_call", origin, position)


# --- tool_call_shape -------------------------------------------------------------------------


def _refuses_index(params: Params) -> bool:
    """Whether the upstream refuses a streaming ``index`` left on a call (OpenAI O12)."""
    fields = provider_of(params).call_fields
    return fields is not None and "index" not in fields


def _all_well_formed(history: History, strip_index: bool) -> bool:
    """Fast path: :func:`_well_formed` holds for every call of the history at once."""
    facts = views.call_facts(history)
    if facts is None:
        return False
    if facts.plain or not strip_index:
        return True  # no call has a key beyond id, type and function, or they do not matter
    keys = views.call_keys(history)
    return keys is not None and "index" not in keys


def _well_formed(calls: list[Any], strip_index: bool = True) -> bool:
    try:
        for call in calls:
            identifier, name = call["id"], call["function"]["name"]
            if (strip_index and "index" in call) or type(call["type"]) is not str:
                return False
            if type(identifier) is not str or type(name) is not str or not identifier or not name:
                return False
    except (KeyError, TypeError):
        return False
    return True


def _fatal(call: Any, j: int) -> tuple[str, str] | None:
    """``(where, detail)`` of what makes a call impossible to repair, if anything."""
    if type(call) is not dict:
        return f".tool_calls[{j}]", f"tool call is {kind(call)}, not an object"
    function = call.get("function")
    if type(function) is not dict:
        return f".tool_calls[{j}].function", f"tool call function is {kind(function)}"
    name = function.get("name")
    if type(name) is str and name:
        return None
    problem = "missing or empty" if name is None or name == "" else kind(name)
    return f".tool_calls[{j}].function.name", f"tool call function name is {problem}"


def _call_hits(
    i: int, j: int, call: dict[str, Any], new_id: str | None, strip_index: bool
) -> list[Hit]:
    hits = []
    if type(call.get("type")) is not str:
        hits.append(Hit(i, f".tool_calls[{j}].type", "tool call without 'type'"))
    if new_id is not None:
        hits.append(Hit(i, f".tool_calls[{j}].id", f"tool call without an id; given {new_id}"))
    if strip_index and "index" in call:
        hits.append(Hit(i, f".tool_calls[{j}].index", "leftover streaming 'index' on a tool call"))
    return hits


def _shape_hits(history: History, i: int, calls: list[Any], strip_index: bool) -> list[Hit]:
    hits: list[Hit] = []
    minted: list[str] = []
    adopted = _adopted_id(history.messages, i, calls)
    for j, call in enumerate(calls):
        fatal = _fatal(call, j)
        if fatal is not None:
            hits.append(Hit(i, *fatal, fatal=True))
            continue
        new_id = None if call_id(call) else adopted or _new_id(history.origin(i), j)
        if new_id is not None and new_id != adopted:
            minted.append(new_id)
        hits.extend(_call_hits(i, j, call, new_id, strip_index))
    if minted:
        hits.extend(_bind_results(history.messages, i, minted))
    return hits


def _adopted_id(messages: list[Message], i: int, calls: list[Any]) -> str | None:
    """The id of the tool result right after message ``i`` when ``i`` has exactly one call
    without an id, that result is the only one there, and it answers no call of the history:
    it can only be that call's (LiteLLM's Ollama transform drops call ids, onyx-dot-app/onyx
    #8522; Ollama's Mistral path then refuses ``Unexpected tool call id b87624841 in tool
    results``, MI9). None when the pairing is not that plain."""
    if sum(1 for call in calls if not call_id(call)) != 1:
        return None
    roles = [m["role"] for m in messages[i + 1 : i + 3]]  # the one result, and what follows it
    if roles[:1] != ["tool"] or roles[1:] == ["tool"]:
        return None
    named = messages[i + 1].get("tool_call_id")
    if type(named) is not str or not named:
        return None
    answered = (c for m in messages if m["role"] == "assistant" for c in tool_calls_of(m))
    if any(call_id(call) == named for call in answered):
        return None
    results = sum(1 for m in messages if m["role"] == "tool" and m.get("tool_call_id") == named)
    return named if results == 1 else None


def _bind_results(messages: list[Message], i: int, minted: list[str]) -> list[Hit]:
    """Tool messages right after ``i`` that name no call, bound in order to the minted ids."""
    hits = []
    waiting = iter(minted)
    for k in range(i + 1, len(messages)):
        message = messages[k]
        if message["role"] != "tool":
            break
        current = message.get("tool_call_id")
        if type(current) is str and current:
            continue
        new_id = next(waiting, None)
        if new_id is None:
            break
        detail = f"tool result without tool_call_id; bound by position to {new_id}"
        hits.append(Hit(k, ".tool_call_id", detail, data=new_id))
    return hits


@rule(
    tools_only=True,
    hint="Send each tool call as {'id', 'type': 'function', 'function': {'name', 'arguments'}}, "
    "without streaming leftovers such as 'index'.",
)
def tool_call_shape(history: History, params: Params) -> list[Hit]:
    """A replayed tool call without ``type`` or ``id``, with a streaming ``index``, or nameless.

    Accumulated streaming deltas keep ``index`` (OpenAI: ``Unknown parameter:
    'messages[1].tool_calls[0].index'.``, O12); older Gemini models returned calls without ids.
    ``index`` is a hit only where the upstream's record refuses unknown call keys (OpenAI,
    Groq): DeepSeek's serde and Gemini ignore it. The ``fix`` repair adds ``type: "function"``,
    mints a stable id from the message's position and the call's (binding, in order, the tool
    messages right after it that name no call), and strips ``index``; a message's only id-less
    call followed by exactly one unanswered result takes that result's id instead (issue 32).
    A call that is not an object, has no ``function`` object or no name cannot be repaired
    (OpenAI: ``Invalid 'messages[69].tool_calls[0].function.name': empty string.``): it is
    rejected, as is a ``tool_calls`` that is not an array.
    """
    strip_index = _refuses_index(params)
    if _all_well_formed(history, strip_index):
        return []
    hits: list[Hit] = []
    messages = history.messages
    for i in history.index.callers:
        calls = messages[i]["tool_calls"]
        if messages[i]["role"] != "assistant" or calls is None:
            continue
        if type(calls) is not list:
            detail = f"'tool_calls' is {kind(calls)}, not an array"
            hits.append(Hit(i, ".tool_calls", detail, fatal=True))
        elif not _well_formed(calls, strip_index):
            hits.extend(_shape_hits(history, i, calls, strip_index))
    return hits


def _fixed_call(
    call: Any, origin: int | None, j: int, strip_index: bool, adopted: str | None
) -> Any:
    if _well_formed([call], strip_index) or _fatal(call, j) is not None:
        return call
    fixed = {
        "id": call["id"] if call_id(call) else adopted or _new_id(origin, j),
        "type": call["type"] if type(call.get("type")) is str else "function",
    }
    dropped = ("id", "type", "index") if strip_index else ("id", "type")
    fixed.update((k, v) for k, v in call.items() if k not in dropped)
    return fixed


@tool_call_shape.repair("fix")
def _fix_shape(history: History, hits: Sequence[Hit], params: Params) -> History:
    strip_index = _refuses_index(params)
    changes: dict[int, Message] = {}
    for hit in hits:
        if hit.fatal or hit.index in changes:
            continue
        message = history.messages[hit.index]
        if message["role"] == "tool":
            changes[hit.index] = {**message, "tool_call_id": hit.data}
        else:
            origin, calls = history.origin(hit.index), message["tool_calls"]
            adopted = _adopted_id(history.messages, hit.index, calls)
            calls = [_fixed_call(c, origin, j, strip_index, adopted) for j, c in enumerate(calls)]
            changes[hit.index] = {**message, "tool_calls": calls}
    return history.replace(changes)


RULES = (tool_call_shape,)
