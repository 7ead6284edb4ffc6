"""Builders of Messages requests for the Messages emulator tests (short case tables)."""

from __future__ import annotations

import json
from typing import Any

Msg = dict[str, Any]
Block = dict[str, Any]
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "deepseek": "deepseek-chat",
    "kimi": "kimi-k2-0905-preview",
    "glm": "glm-4.6",
    "minimax": "MiniMax-M2",
}
PROVIDERS = tuple(MODELS)
SIGNATURE = "RW11bGF0ZWQgc2lnbmF0dXJlIG9mIGEgdGhpbmtpbmcgYmxvY2s="
READ = {
    "name": "read_file",
    "description": "Read a file.",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}


def user(text: str = "Read config.py.") -> Msg:
    return {"role": "user", "content": text}


def users(*blocks: Block) -> Msg:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Block) -> Msg:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str = "Done.", **extra: Any) -> Block:
    return {"type": "text", "text": value, **extra}


def use(id_: str = "toolu_01A", name: str = "read_file", **extra: Any) -> Block:
    return {"type": "tool_use", "id": id_, "name": name, "input": {"path": "config.py"}, **extra}


def result(id_: str = "toolu_01A", content: Any = "x = 1", **extra: Any) -> Block:
    return {"type": "tool_result", "tool_use_id": id_, "content": content, **extra}


def thinking(value: str = "Let me read it.", signature: str = SIGNATURE) -> Block:
    return {"type": "thinking", "thinking": value, "signature": signature}


def request(*messages: Msg, provider: str = "anthropic", **extra: Any) -> dict[str, Any]:
    """A request; DeepSeek's with thinking disabled unless told (it thinks by default, M21)."""
    body = {"model": MODELS[provider], "max_tokens": 1024, "messages": list(messages)}
    if provider == "deepseek":
        body["thinking"] = {"type": "disabled"}
    return body | extra


def anthropic_error(message: str, type_: str = "invalid_request_error") -> dict[str, Any]:
    return {"type": "error", "error": {"type": type_, "message": message}}


def raw(payload: Any) -> bytes:
    return json.dumps(payload).encode()
