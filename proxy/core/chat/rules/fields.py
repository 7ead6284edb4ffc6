"""The rule about message keys the upstream does not accept, and its per-upstream allow-lists.

It runs last, after every other repair, so that nothing leaves with a field its upstream
refuses (provider-rules.md rows O12, O13).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from proxy.core.chat.messages import History, Message, tool_calls_of
from proxy.core.chat.rules import views
from proxy.core.rule import Hit, Params, rule

_PLAIN = frozenset({"role", "content", "name"})
_TOOL = frozenset({"role", "content", "tool_call_id", "name"})
_OPENAI_ASSISTANT = frozenset(
    {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"}
)

#: Message keys each upstream accepts, per dialect and role (``unknown_message_field``).
#: ``name`` on tool messages: Gemini expects it (G13); OpenAI and DeepSeek accept it (not seen
#: rejected). A role missing from a dialect is another rule's business (``developer_role``…).
MESSAGE_FIELDS: dict[str, dict[str, frozenset[str]]] = {
    "openai": {
        "system": _PLAIN,
        "developer": _PLAIN,
        "user": _PLAIN,
        "assistant": _OPENAI_ASSISTANT,
        "tool": _TOOL,
        "function": _PLAIN,
    },
    "deepseek": {
        "system": _PLAIN,
        "user": _PLAIN,
        "assistant": frozenset(
            {"role", "content", "name", "tool_calls", "reasoning_content", "prefix"}
        ),
        "tool": _TOOL,
    },
    "gemini": {
        "system": _PLAIN,
        "developer": _PLAIN,
        "user": _PLAIN,
        "assistant": _OPENAI_ASSISTANT | {"extra_content"},
        "tool": _TOOL,
        "function": _PLAIN,
    },
}
#: Keys of one entry of ``tool_calls``; Gemini carries thought signatures in ``extra_content``.
CALL_FIELDS: dict[str, frozenset[str]] = {
    "openai": frozenset({"id", "type", "function"}),
    "deepseek": frozenset({"id", "type", "function"}),
    "gemini": frozenset({"id", "type", "function", "extra_content"}),
}
FUNCTION_FIELDS = frozenset({"name", "arguments"})
#: Keys of a content part, per part type (other part types are left to the upstream).
PART_FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset({"type", kind})
    for kind in ("text", "image_url", "input_audio", "file", "refusal")
}


@rule(
    "unknown_message_field",
    hint="Send only the fields the upstream accepts; drop client bookkeeping from messages.",
    params={"allow_extra": []},
)
def unknown_message_field(history: History, params: Params) -> list[Hit]:
    """A key the upstream does not accept, in a message, a tool call, its function or a part.

    OpenAI (O12): ``Unknown parameter: 'messages[1].tool_calls[0].index'.``; on content parts
    (O13): ``Unknown parameter: 'messages[0].content[0].cache_control'.``; Groq, per role:
    ``'messages.2' : for 'role: assistant' the following must be satisfied[('messages.2' :
    property 'reasoning_content' is unsupported)]``. Typical strays: streaming ``index``,
    ``reasoning_content`` or ``reasoning`` (outside DeepSeek), Anthropic ``cache_control``,
    client bookkeeping (``status``, ``metadata``, ``timestamp``, ``id``). What each dialect
    accepts is the data table at the top of this module; ``allow_extra`` names more keys to
    keep at every level. The ``strip`` repair removes the rest.
    """
    allowed = _allowed(params)
    messages = history.messages
    hits = _message_hits(history, allowed)
    if not _calls_clean(history, allowed):
        for i in history.index.callers:
            if "tool_calls" in allowed.messages.get(messages[i]["role"], ()):
                hits.extend(_call_hits(i, messages[i], allowed))
    for i in history.index.odd_content if list in views.odd_types(history) else ():
        if type(messages[i].get("content")) is list and messages[i]["role"] in allowed.messages:
            hits.extend(_part_hits(i, messages[i], allowed))
    hits.sort(key=lambda h: h.index)
    return hits


def _message_hits(history: History, allowed: _Allowed) -> list[Hit]:
    """Message-level strays; the per-role key unions of the index spare the scan when clean."""
    fields = allowed.messages
    strays = [r for r, keys in history.index.keys.items() if r in fields and not keys <= fields[r]]
    if not strays:
        return []
    return [
        Hit(i, f".{k}", f"unknown field {k!r}")
        for i, message in enumerate(history.messages)
        if message["role"] in strays
        for k in message
        if k not in fields[message["role"]]
    ]


def _calls_clean(history: History, allowed: _Allowed) -> bool:
    """True when no tool call nor function has a stray key (C-level; odd shapes say False)."""
    facts = views.call_facts(history)
    if facts is not None and facts.plain:
        return True  # only id, type, function and name, arguments: allowed everywhere
    keys, function_keys = views.call_keys(history), views.function_keys(history)
    if keys is None or function_keys is None:
        return False
    return keys <= allowed.calls and function_keys <= allowed.function


class _Allowed:
    """The allow-lists of one dialect with ``allow_extra`` added at every level."""

    __slots__ = ("calls", "function", "messages", "parts")

    def __init__(self, dialect: str, extra: frozenset[str]) -> None:
        table = MESSAGE_FIELDS.get(dialect, MESSAGE_FIELDS["openai"])
        self.messages = {role: fields | extra for role, fields in table.items()}
        self.calls = CALL_FIELDS.get(dialect, CALL_FIELDS["openai"]) | extra
        self.function = FUNCTION_FIELDS | extra
        self.parts = {kind: fields | extra for kind, fields in PART_FIELDS.items()}


@lru_cache(maxsize=32)
def _allowed_for(dialect: str, extra: frozenset[str]) -> _Allowed:
    return _Allowed(dialect, extra)


def _allowed(params: Params) -> _Allowed:
    extra = params.get("allow_extra") or ()
    names = frozenset(x for x in extra if type(x) is str) if type(extra) is list else frozenset()
    return _allowed_for(str(params.get("dialect", "openai")), names)


def _strays(mapping: Mapping[str, Any], fields: frozenset[str]) -> list[str]:
    return [] if mapping.keys() <= fields else [k for k in mapping if k not in fields]


def _call_hits(i: int, message: Message, allowed: _Allowed) -> list[Hit]:
    hits: list[Hit] = []
    for k, call in enumerate(tool_calls_of(message)):
        if type(call) is not dict:
            continue
        hits.extend(
            Hit(i, f".tool_calls[{k}].{f}", f"unknown field {f!r}")
            for f in _strays(call, allowed.calls)
        )
        function = call.get("function")
        if type(function) is dict:
            hits.extend(
                Hit(i, f".tool_calls[{k}].function.{f}", f"unknown field {f!r}")
                for f in _strays(function, allowed.function)
            )
    return hits


def _part_fields(part: Any, allowed: _Allowed) -> frozenset[str] | None:
    """The keys ``part`` may have, or None when its type is not one we know."""
    if type(part) is not dict or type(kind := part.get("type")) is not str:
        return None
    return allowed.parts.get(kind)


def _part_hits(i: int, message: Message, allowed: _Allowed) -> list[Hit]:
    content = message.get("content")
    if type(content) is not list:
        return []
    hits: list[Hit] = []
    for k, part in enumerate(content):
        fields = _part_fields(part, allowed)
        if fields is not None:
            hits.extend(
                Hit(i, f".content[{k}].{f}", f"unknown field {f!r}") for f in _strays(part, fields)
            )
    return hits


@unknown_message_field.repair("strip")
def _strip_fields(history: History, hits: Sequence[Hit], params: Params) -> History:
    allowed = _allowed(params)
    return history.replace(
        {i: _stripped(history.messages[i], allowed) for i in {h.index for h in hits}}
    )


def _only(mapping: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    return (
        mapping if mapping.keys() <= fields else {k: v for k, v in mapping.items() if k in fields}
    )


def _stripped(message: Message, allowed: _Allowed) -> Message:
    out = _only(message, allowed.messages[message["role"]])
    if type(out.get("tool_calls")) is list:
        out = {**out, "tool_calls": [_stripped_call(c, allowed) for c in out["tool_calls"]]}
    if type(out.get("content")) is list:
        out = {**out, "content": [_stripped_part(p, allowed) for p in out["content"]]}
    return out


def _stripped_call(call: Any, allowed: _Allowed) -> Any:
    if type(call) is not dict:
        return call
    out = _only(call, allowed.calls)
    if type(out.get("function")) is dict:
        out = {**out, "function": _only(out["function"], allowed.function)}
    return out


def _stripped_part(part: Any, allowed: _Allowed) -> Any:
    fields = _part_fields(part, allowed)
    return part if fields is None else _only(part, fields)


RULES = (unknown_message_field,)
