"""Rules about what tool calls carry: arguments that are no JSON-encoded object, and
``tool_calls`` arrays that carry no call.

They run after tool_call_shape and before pairing. Each detector first proves a clean history
clean over every call at once (:mod:`.views`), and only then scans message by message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from proxy.core.chat.messages import History
from proxy.core.chat.rules import views
from proxy.core.chat.rules.calls import compact, kind
from proxy.core.rule import Hit, Params, rule

CallsCheck = Callable[[list[Any]], bool]


def _arguments_hits(
    history: History, passes: CallsCheck, problem: Callable[[Any], str | None]
) -> list[Hit]:
    """Hits for the calls whose arguments have a ``problem``, in messages ``passes`` fails."""
    messages = history.messages
    hits = []
    for i in history.index.callers:
        message, calls = messages[i], messages[i]["tool_calls"]
        if type(calls) is not list or message["role"] != "assistant" or passes(calls):
            continue
        for j, call in enumerate(calls):
            function = call.get("function") if type(call) is dict else None
            detail = problem(function.get("arguments")) if type(function) is dict else None
            if detail is not None:
                hits.append(Hit(i, f".tool_calls[{j}].function.arguments", detail, data=j))
    return hits


def _rewrite_arguments(
    history: History, hits: Sequence[Hit], convert: Callable[[Any], str]
) -> History:
    """Replace the hit calls' ``function.arguments`` with ``convert(arguments)``."""
    rewritten: dict[int, list[Any]] = {}
    for hit in hits:
        calls = rewritten.get(hit.index)
        if calls is None:
            calls = rewritten[hit.index] = list(history.messages[hit.index]["tool_calls"])
        call = calls[hit.data]
        function = call["function"]
        arguments = convert(function.get("arguments"))
        calls[hit.data] = {**call, "function": {**function, "arguments": arguments}}
    return history.replace(
        {i: {**history.messages[i], "tool_calls": c} for i, c in rewritten.items()}
    )


def _all_strings(calls: list[Any]) -> bool:
    try:
        for call in calls:
            if type(call["function"]["arguments"]) is not str:
                return False
    except (KeyError, TypeError):
        return False
    return True


def _not_a_string(arguments: Any) -> str | None:
    if type(arguments) is str:
        return None
    return f"arguments are {kind(arguments)}, expected a JSON-encoded string"


@rule(
    tools_only=True,
    hint="Send function.arguments as a JSON-encoded string (json.dumps the arguments object; "
    '"{}" when there are none).',
)
def arguments_not_string(history: History, params: Params) -> list[Hit]:
    """``function.arguments`` stored as an object, array, number, boolean, null, or missing.

    OpenAI: ``Invalid type for 'messages[2].tool_calls[0].function.arguments': expected a
    string, but got an object instead.``; Ollama's ``/v1``: ``cannot unmarshal object into Go
    struct field .messages.tool_calls.function.arguments of type string``. The ``stringify``
    repair encodes the value as compact JSON; null or missing arguments become ``"{}"``.
    """
    facts = views.call_facts(history)
    if facts is not None and facts.string_arguments:
        return []
    return _arguments_hits(history, _all_strings, _not_a_string)


@arguments_not_string.repair("stringify")
def _stringify_arguments(history: History, hits: Sequence[Hit], params: Params) -> History:
    return _rewrite_arguments(history, hits, lambda a: "{}" if a is None else compact(a))


def _all_objects(calls: list[Any]) -> bool:
    loads = orjson.loads
    try:
        for call in calls:
            if type(loads(call["function"]["arguments"])) is not dict:
                return False
    except (KeyError, TypeError, ValueError):  # orjson.JSONDecodeError is a ValueError
        return False
    return True


#: Argument strings seen to parse to a JSON object. Agents resend their whole history every
#: turn, so most arguments of a request were parsed for the one before: a set lookup instead of
#: a parse. Bounded: only short strings, and emptied when full. A memo of a pure function.
_OBJECTS: set[str] = set()
_REMEMBER_CHARS = 1024
_REMEMBER_MAX = 4096


def _known_objects(arguments: list[Any] | None) -> bool:
    """Fast path: every argument is a string that parses to a JSON object."""
    if arguments is None:
        return False
    try:
        return _OBJECTS.issuperset(arguments) or all(map(_parses_to_object, arguments))
    except TypeError:  # an unhashable argument (an object or array), not a string anyway
        return False


def _parses_to_object(arguments: Any) -> bool:
    if arguments in _OBJECTS:
        return True
    if type(arguments) is not str:
        return False
    try:
        if type(orjson.loads(arguments)) is not dict:
            return False
    except ValueError:  # orjson.JSONDecodeError is a ValueError
        return False
    if len(arguments) <= _REMEMBER_CHARS:
        if len(_OBJECTS) >= _REMEMBER_MAX:
            _OBJECTS.clear()
        _OBJECTS.add(arguments)
    return True


def _not_an_object(arguments: Any) -> str | None:
    if type(arguments) is not str:
        return None  # arguments_not_string's concern
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError as exc:
        return f"arguments are not JSON: {exc}" if arguments.strip() else "arguments are empty"
    return None if type(value) is dict else f"arguments are {kind(value)}, not a JSON object"


@rule(
    tools_only=True,
    hint="Keep function.arguments a complete JSON object (text that is not one goes wrapped as "
    '{"raw_arguments": ...}); don\'t persist truncated tool calls.',
)
def arguments_invalid_json(history: History, params: Params) -> list[Hit]:
    """A ``function.arguments`` string that is not a JSON object (truncated, empty, a list).

    Output cut by ``max_tokens`` inside a call, or compaction truncating long arguments, leaves
    broken JSON that strict hosts parse on replay: vLLM ``json.decoder.JSONDecodeError:
    Unterminated string starting at: line 1 column 1121``, OpenRouter hosts ``Extra data: line
    1 column 24 (char 23)``. ``wrap`` keeps the text as ``{"raw_arguments": "<original>"}``;
    ``empty_object`` replaces it with ``"{}"``. Empty arguments become ``"{}"`` either way.
    """
    facts = views.call_facts(history)
    if _known_objects(facts.arguments if facts is not None else views.arguments(history)):
        return []
    return _arguments_hits(history, _all_objects, _not_an_object)


@arguments_invalid_json.repair("wrap")
def _wrap_arguments(history: History, hits: Sequence[Hit], params: Params) -> History:
    def wrap(arguments: str) -> str:
        return compact({"raw_arguments": arguments}) if arguments.strip() else "{}"

    return _rewrite_arguments(history, hits, wrap)


@arguments_invalid_json.repair("empty_object")
def _empty_arguments(history: History, hits: Sequence[Hit], params: Params) -> History:
    return _rewrite_arguments(history, hits, lambda arguments: "{}")


# --- empty_tool_calls ------------------------------------------------------------------------


@rule(
    tools_only=True,
    hint="Omit 'tool_calls' on messages that make no tool call.",
)
def empty_tool_calls(history: History, params: Params) -> list[Hit]:
    """``tool_calls: []`` on a message that makes no call.

    OpenAI (O7): ``Invalid 'messages[2].tool_calls': empty array. Expected an array with
    minimum length 1, but got an empty array instead.``; DashScope: ``Empty tool_calls is not
    supported in message``; vLLM chat templates break on it (§4). The presets switch it on
    where that evidence is (DeepSeek's serde and Gemini take it). ``tool_calls: null``, which
    the openai SDK's ``model_dump()`` writes on every assistant message, is no hit: no upstream
    was seen refusing it. The ``remove`` repair drops the key.
    """
    if not history.index.empty_call_list:
        return []
    messages = history.messages
    return [
        Hit(i, ".tool_calls", "'tool_calls' is an empty array")
        for i in history.index.callers
        if messages[i]["tool_calls"] == []
    ]


@empty_tool_calls.repair("remove")
def _remove_empty_calls(history: History, hits: Sequence[Hit], params: Params) -> History:
    changes = {}
    for hit in hits:
        message = history.messages[hit.index]
        changes[hit.index] = {k: v for k, v in message.items() if k != "tool_calls"}
    return history.replace(changes)


RULES = (arguments_not_string, arguments_invalid_json, empty_tool_calls)
