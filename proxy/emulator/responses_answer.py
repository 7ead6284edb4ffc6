"""Deterministic answers to valid Responses requests: a ``response`` object or its SSE events.

The same request bytes always give the same answer bytes: ids derive from a hash of the body,
``created_at`` is fixed. What is answered:

- the request has ``function`` tools, ``tool_choice`` is not ``"none"`` and the last item is a
  user message (or ``input`` is a string): one ``function_call`` to the first tool,
  ``arguments`` ``"{}"``;
- otherwise an assistant message: a text quoting the trailing call outputs, or echoing the
  start of the last user text.

Reasoning models (``o<digit>…``, ``gpt-5…``, ``…codex…``) answer a ``reasoning`` item first
(``encrypted_content`` when ``include`` asks for ``reasoning.encrypted_content``); every item
of that answer carries the reasoning's hash (``fc_<h>_0`` after ``rs_<h>``), which is how the
validator knows, statelessly, which reasoning a replayed item needs (R4/R5).

Streams are semantic SSE events as OpenAI sends them: ``response.created``,
``response.in_progress``, per item ``response.output_item.added``, the text's
``response.content_part.added`` / ``response.output_text.delta``… / ``.done`` (or the call's
``response.function_call_arguments.delta`` / ``.done``), ``response.output_item.done``, then
``response.completed``; each with a ``sequence_number``.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import orjson

from proxy.emulator.common import Rejection
from proxy.emulator.openai import not_json
from proxy.emulator.responses import validate_responses

CREATED = 1735689600
_REASONING_MODEL = re.compile(r"o\d|gpt-5|.*codex")
Event = dict[str, Any]


def responses_reply(raw: bytes, chunks: int | None = None) -> Rejection | bytes | list[bytes]:
    """What the emulator sends for these request bytes: a rejection, a JSON body or SSE frames."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return not_json()
    rejection = validate_responses(body)
    if rejection is not None:
        return rejection
    response = answer(body, raw)
    if body.get("stream") is not True:
        return orjson.dumps(response)
    return [_frame(event) for event in events(response, chunks)]


def answer(body: dict[str, Any], raw: bytes) -> dict[str, Any]:
    """The completed ``response`` object for a valid request."""
    digest = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
    model = body["model"]
    output: list[dict[str, Any]] = []
    reasoning = _REASONING_MODEL.match(model) is not None
    suffix = f"{digest}_0" if reasoning else digest[:32]
    if reasoning:
        output.append(_reasoning(digest, body))
    tool = _tool_to_call(body)
    if tool is not None:
        output.append(_call(suffix, digest, tool))
    else:
        output.append(_message(suffix, _text(body)))
    return _response(body, digest, output)


def _reasoning(digest: str, body: dict[str, Any]) -> dict[str, Any]:
    include = body.get("include")
    wanted = isinstance(include, list) and "reasoning.encrypted_content" in include
    blob = "gAAAAA" + base64.urlsafe_b64encode(bytes.fromhex(digest)).decode() if wanted else None
    return {"id": f"rs_{digest}", "type": "reasoning", "summary": [], "encrypted_content": blob}


def _call(suffix: str, digest: str, name: str) -> dict[str, Any]:
    return {
        "id": f"fc_{suffix}",
        "type": "function_call",
        "status": "completed",
        "call_id": f"call_{digest[:24]}",
        "name": name,
        "arguments": "{}",
    }


def _message(suffix: str, text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    return {
        "id": f"msg_{suffix}",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [part],
    }


def _tool_to_call(body: dict[str, Any]) -> str | None:
    tools = body.get("tools")
    if body.get("tool_choice") == "none" or not isinstance(tools, list):
        return None
    names = [t.get("name") for t in tools if isinstance(t, dict) and t.get("type") == "function"]
    items = body.get("input")
    last_is_user = isinstance(items, str) or (
        isinstance(items, list) and bool(items) and _is_user(items[-1])
    )
    name = next((n for n in names if isinstance(n, str)), None)
    return name if last_is_user else None


def _is_user(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") == "user"


def _text(body: dict[str, Any]) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return f"Emulated openai answer to: {items[:60]}"
    items = items if isinstance(items, list) else []
    outputs = []
    for item in reversed(items):
        if not str(item.get("type", "")).endswith("_output"):
            break
        outputs.append(str(item.get("output"))[:40])
    if outputs:
        return "Emulated openai answer to the tool outputs: " + "; ".join(reversed(outputs))
    users = [item for item in items if _is_user(item)]
    return f"Emulated openai answer to: {_user_text(users[-1])[:60] if users else ''}"


def _user_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return " ".join(
        p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
    )


def _response(body: dict[str, Any], digest: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    words = len(orjson.dumps(body.get("input"))) // 4 + 1
    produced = sum(len(str(item.get("arguments", item.get("content")))) for item in output) // 4
    reasoning = 8 if output[0]["type"] == "reasoning" else 0
    usage = {
        "input_tokens": words,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": produced + reasoning + 1,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": words + produced + reasoning + 1,
    }
    return {
        "id": f"resp_{digest}",
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "model": body["model"],
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "store": body.get("store", True),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }


def events(response: dict[str, Any], chunks: int | None) -> list[Event]:
    """The SSE events streaming ``response`` (text cut in ``chunks`` pieces, else per word)."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    out: list[Event] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(response["output"]):
        out.extend(_item_events(index, item, chunks))
    out.append({"type": "response.completed", "response": response})
    return [{**event, "sequence_number": n} for n, event in enumerate(out)]


def _item_events(index: int, item: dict[str, Any], chunks: int | None) -> list[Event]:
    added = {**item, "status": "in_progress"}
    if item["type"] == "message":
        added["content"] = []
    elif item["type"] == "function_call":
        added["arguments"] = ""
    where = {"item_id": item["id"], "output_index": index}
    out: list[Event] = [
        {"type": "response.output_item.added", "output_index": index, "item": added}
    ]
    if item["type"] == "message":
        out.extend(_text_events(where, item["content"][0], chunks))
    elif item["type"] == "function_call":
        arguments = item["arguments"]
        out.append({"type": "response.function_call_arguments.delta", **where, "delta": arguments})
        out.append(
            {"type": "response.function_call_arguments.done", **where, "arguments": arguments}
        )
    out.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return out


def _text_events(where: dict[str, Any], part: dict[str, Any], chunks: int | None) -> list[Event]:
    at = {**where, "content_index": 0}
    empty = {**part, "text": ""}
    out: list[Event] = [{"type": "response.content_part.added", **at, "part": empty}]
    for piece in _pieces(part["text"], chunks):
        out.append({"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []})
    out.append({"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []})
    out.append({"type": "response.content_part.done", **at, "part": part})
    return out


def _pieces(text: str, chunks: int | None) -> list[str]:
    if chunks is None:
        return re.findall(r"\S+\s*|\s+", text) or [text]
    size = max(1, -(-len(text) // max(chunks, 1)))
    return [text[k : k + size] for k in range(0, len(text), size)] or [text]


def _frame(event: Event) -> bytes:
    name = str(event["type"]).encode()
    return b"event: " + name + b"\ndata: " + orjson.dumps(event) + b"\n\n"
