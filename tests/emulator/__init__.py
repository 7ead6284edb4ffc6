"""Tests of the strict provider emulators; the builders below keep the case tables short."""

from __future__ import annotations

from typing import Any

Msg = dict[str, Any]


def user(text: str = "What is the weather in Paris?") -> Msg:
    return {"role": "user", "content": text}


def system(text: str = "You are terse.") -> Msg:
    return {"role": "system", "content": text}


def assistant(text: str = "It is sunny.") -> Msg:
    return {"role": "assistant", "content": text}


def call(suffix: str, name: str = "get_weather", arguments: Any = "{}", **extra: Any) -> Msg:
    """A tool call with id ``call_<suffix>``."""
    function = {"name": name, "arguments": arguments}
    return {"id": f"call_{suffix}", "type": "function", "function": function, **extra}


def asks(*calls: Msg, **extra: Any) -> Msg:
    """An assistant message making `calls` (``content: ""``, accepted by all three)."""
    return {"role": "assistant", "content": "", "tool_calls": list(calls), **extra}


def result(suffix: str, content: str = "18 C", name: str = "get_weather") -> Msg:
    """The tool message answering ``call_<suffix>`` (with ``name``, which Gemini needs)."""
    return {"role": "tool", "tool_call_id": f"call_{suffix}", "name": name, "content": content}


def signed(suffix: str, signature: str = "skip_thought_signature_validator") -> Msg:
    """A tool call carrying a Gemini thought signature."""
    return call(suffix, extra_content={"google": {"thought_signature": signature}})


def body(*messages: Msg, model: str = "any-model", **fields: Any) -> dict[str, Any]:
    """A request body; ``messages`` is the last key (DeepSeek position tests rely on it)."""
    return {"model": model, **fields, "messages": list(messages)}
