"""The rule about message keys the upstream does not accept.

What each upstream accepts is its record's (:mod:`proxy.core.providers`: ``message_fields``,
``call_fields``, ``refused_fields``, ``strict_parts``). It runs last, after every other repair,
so that nothing leaves with a field its upstream refuses (provider-rules.md rows O12, O13).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from proxy.core.chat.messages import History, Message, tool_calls_of
from proxy.core.chat.rules import views
from proxy.core.providers import Provider, provider_of
from proxy.core.rule import Hit, Params, rule

FUNCTION_FIELDS = frozenset({"name", "arguments"})
#: Keys of a content part, per part type (other part types are left to the upstream).
PART_FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset({"type", kind})
    for kind in ("text", "image_url", "input_audio", "file", "refusal")
}


@rule(
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
    client bookkeeping (``status``, ``metadata``, ``timestamp``, ``id``); Mistral: 422
    ``extra_forbidden`` with the key's ``loc`` (B1); xAI: ``Only messages of role 'user' can
    have a name.`` (§4). Only upstreams whose record lists the keys they take (OpenAI,
    Mistral, Groq) or the keys they refuse (xAI) have hits: DeepSeek's serde, Gemini, Kimi,
    DashScope, vLLM and Ollama ignore unknown keys, so a stray ``index`` or
    ``reasoning_content`` is left there. ``allow_extra`` names more keys to keep at every
    level. The ``strip`` repair removes the rest.
    """
    allowed = _allowed(params)
    messages = history.messages
    hits = _message_hits(history, allowed)
    if not _calls_clean(history, allowed):
        for i in history.index.callers:
            if allowed.takes(messages[i]["role"], ("tool_calls",)):
                hits.extend(_call_hits(i, messages[i], allowed))
    parts = allowed.parts and list in views.odd_types(history)
    for i in history.index.odd_content if parts else ():
        if type(messages[i].get("content")) is list:
            hits.extend(_part_hits(i, messages[i], allowed))
    hits.sort(key=lambda h: h.index)
    return hits


def _message_hits(history: History, allowed: _Allowed) -> list[Hit]:
    """Message-level strays; the per-role key unions of the index spare the scan when clean."""
    keys = history.index.keys
    strays = [r for r, found in keys.items() if not allowed.takes(r, found)]
    if not strays:
        return []
    return [
        Hit(i, f".{k}", f"unknown field {k!r}")
        for i, message in enumerate(history.messages)
        if message["role"] in strays
        for k in message
        if not allowed.takes(message["role"], (k,))
    ]


def _calls_clean(history: History, allowed: _Allowed) -> bool:
    """True when no tool call nor function has a stray key (C-level; odd shapes say False)."""
    if allowed.calls is None or not history.index.callers:
        return True  # the upstream ignores unknown keys in calls, or there is no call
    facts = views.call_facts(history)
    if facts is not None and facts.plain:
        return True  # only id, type, function and name, arguments: allowed everywhere
    keys, function_keys = views.call_keys(history), views.function_keys(history)
    if keys is None or function_keys is None:
        return False
    return keys <= allowed.calls and function_keys <= allowed.function


class _Allowed:
    """What one upstream accepts, with ``allow_extra`` added at every level.

    ``messages`` is None for an upstream that ignores unknown message keys (then only its
    ``refused`` keys are strays); ``calls`` is None when it ignores unknown call keys.
    """

    __slots__ = ("calls", "function", "messages", "parts", "refused")

    def __init__(self, provider: Provider, extra: frozenset[str]) -> None:
        table = provider.message_fields
        self.messages = None if table is None else {r: f | extra for r, f in table.items()}
        self.refused = {role: keys - extra for role, keys in provider.refused_fields.items()}
        self.calls = None if provider.call_fields is None else provider.call_fields | extra
        self.function = FUNCTION_FIELDS | extra
        parts = PART_FIELDS if provider.strict_parts else {}
        self.parts = {kind: fields | extra for kind, fields in parts.items()}

    def takes(self, role: str, keys: Iterable[str]) -> bool:
        """Whether a message of ``role`` may carry all of ``keys`` (unknown roles: yes, they
        are other rules' business)."""
        if self.messages is None:
            refused = self.refused.get(role)
            return not refused or refused.isdisjoint(keys)
        fields = self.messages.get(role)
        return fields is None or fields.issuperset(keys)

    def fields(self, role: str, message: Message) -> frozenset[str]:
        """The keys of ``message`` (of ``role``) to keep."""
        if self.messages is None:
            return frozenset(message) - self.refused.get(role, frozenset())
        return self.messages.get(role, frozenset(message))


@lru_cache(maxsize=64)
def _allowed_for(provider: Provider, extra: frozenset[str]) -> _Allowed:
    return _Allowed(provider, extra)


def _allowed(params: Params) -> _Allowed:
    extra = params.get("allow_extra") or ()
    names = frozenset(x for x in extra if type(x) is str) if type(extra) is list else frozenset()
    return _allowed_for(provider_of(params), names)


def _strays(mapping: Mapping[str, Any], fields: frozenset[str]) -> list[str]:
    return [] if mapping.keys() <= fields else [k for k in mapping if k not in fields]


def _call_hits(i: int, message: Message, allowed: _Allowed) -> list[Hit]:
    if allowed.calls is None:
        return []
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
    out = _only(message, allowed.fields(message["role"], message))
    if allowed.calls is not None and type(out.get("tool_calls")) is list:
        out = {**out, "tool_calls": [_stripped_call(c, allowed) for c in out["tool_calls"]]}
    if type(out.get("content")) is list:
        out = {**out, "content": [_stripped_part(p, allowed) for p in out["content"]]}
    return out


def _stripped_call(call: Any, allowed: _Allowed) -> Any:
    if type(call) is not dict or allowed.calls is None:
        return call
    out = _only(call, allowed.calls)
    if type(out.get("function")) is dict:
        out = {**out, "function": _only(out["function"], allowed.function)}
    return out


def _stripped_part(part: Any, allowed: _Allowed) -> Any:
    fields = _part_fields(part, allowed)
    return part if fields is None else _only(part, fields)


RULES = (unknown_message_field,)
