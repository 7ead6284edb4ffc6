"""Helpers of the second-tier emulator tests (written apart from the emulators they check)."""

from __future__ import annotations

import json
from typing import Any

from proxy.emulator import validate


def wire(payload: Any) -> bytes:
    """Compact JSON as Go, Rust and FastAPI servers print it."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def rejected(provider: str, request: Any) -> tuple[int, bytes, str]:
    """(status, body bytes, rule) of the emulator's rejection; fails when it accepts."""
    rejection = validate(provider, request, raw=None)
    assert rejection is not None, "the emulator accepted the request"
    return rejection.status, rejection.body, rejection.rule


def fn_call(call_id: str, name: str = "get_weather", arguments: Any = "{}", **extra: Any) -> Any:
    """A tool call with exactly this id."""
    function = {"name": name, "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function, **extra}


def calls(*tool_calls: Any, content: Any = "", **extra: Any) -> dict[str, Any]:
    """An assistant message making `tool_calls`."""
    return {"role": "assistant", "content": content, "tool_calls": list(tool_calls), **extra}


def answer(call_id: str, content: str = "18 C", **extra: Any) -> dict[str, Any]:
    """The tool message answering `call_id` (no ``name`` unless given)."""
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}
