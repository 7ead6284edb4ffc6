"""What of a request body is stored: ``repair_log.capture = full | redacted | none``.

- ``full``: the bodies as they are (minus any top-level credential field, see
  :data:`SECRET_KEYS`).
- ``redacted``: every string becomes ``{"length": n, "sha256": hex}`` except roles, ids, tool
  names, types and the model: what was changed stays visible, what was said does not.
- ``none``: structure only: the model, the stream flag, and per message its role, ids and tool
  names.

The upstream's error body is kept in every mode (bounded by ``max_error_body_bytes``): it is
what the provider said, and it is what explains an ``upstream_rejected`` record.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

from proxy.repairlog.record import Record

#: Top-level body fields that can carry a credential; never stored.
SECRET_KEYS = frozenset({"api_key", "apikey", "api-key", "authorization", "x-api-key", "key"})
#: Strings kept verbatim in redacted mode (identifiers and names, not text).
KEPT = frozenset({"role", "id", "tool_call_id", "type", "model", "object"})
#: Roles whose ``name`` is a tool's name (on user/system/assistant it is a person's name).
TOOL_ROLES = frozenset({"tool", "function"})


def apply_capture(record: Record, mode: str, max_error_bytes: int) -> Record:
    """A copy of ``record`` holding only what ``mode`` keeps."""
    transform = _MODES[mode]
    return dataclasses.replace(
        record,
        received=transform(_without_secrets(record.received)),
        forwarded=None
        if record.forwarded is None
        else transform(_without_secrets(record.forwarded)),
        upstream_error=truncate(record.upstream_error, max_error_bytes),
        attempts=None
        if record.attempts is None
        else [_attempt(a, transform, max_error_bytes) for a in record.attempts],
    )


def _attempt(attempt: dict[str, Any], transform: Any, max_error_bytes: int) -> dict[str, Any]:
    """One attempt of a retried request, its body and error kept as ``mode`` keeps them."""
    return {
        **attempt,
        "forwarded": transform(_without_secrets(attempt.get("forwarded"))),
        "upstream_error": truncate(attempt.get("upstream_error"), max_error_bytes),
    }


def capture_batch(batch: list[Record], mode: str, max_error_bytes: int) -> list[Record]:
    """:func:`apply_capture` over a batch (the writer runs it off the event loop)."""
    return [apply_capture(record, mode, max_error_bytes) for record in batch]


def truncate(text: str | None, max_bytes: int) -> str | None:
    """At most ``max_bytes`` of UTF-8, cut on a character boundary."""
    if text is None or len(text) * 4 <= max_bytes:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def digest(text: str) -> dict[str, Any]:
    """The redacted form of a string: its length and SHA-256."""
    data = text.encode("utf-8", "surrogatepass")
    return {"length": len(text), "sha256": hashlib.sha256(data).hexdigest()}


def _without_secrets(body: Any) -> Any:
    if not isinstance(body, dict) or not any(k.lower() in SECRET_KEYS for k in body):
        return body
    return {k: v for k, v in body.items() if k.lower() not in SECRET_KEYS}


def _full(body: Any) -> Any:
    return body


def _redacted(body: Any) -> Any:
    if not isinstance(body, dict):
        return _redact(body, None)
    out = {}
    for key, value in body.items():
        if key == "messages" and isinstance(value, list):
            out[key] = [_redact_message(m) for m in value]
        else:
            out[key] = _redact(value, key)
    return out


def _redact_message(message: Any) -> Any:
    if not isinstance(message, dict):
        return _redact(message, None)
    tool_role = message.get("role") in TOOL_ROLES
    return {
        key: value
        if key == "name" and tool_role and isinstance(value, str)
        else _redact(value, key)
        for key, value in message.items()
    }


def _redact(value: Any, key: str | None) -> Any:
    if isinstance(value, str):
        return value if key in KEPT else digest(value)
    if isinstance(value, dict):
        # Inside a dict (tool calls, tools, parts) ``name`` names a function, not a person.
        return {
            k: v if k == "name" and isinstance(v, str) else _redact(v, k) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(item, key) for item in value]
    return value  # numbers, booleans, null


def _structure(body: Any) -> Any:
    if not isinstance(body, dict):
        return None
    out = {key: body[key] for key in ("model", "stream") if key in body}
    if isinstance(body.get("messages"), list):
        out["messages"] = [_skeleton(m) for m in body["messages"]]
    if isinstance(body.get("tools"), list):
        out["tools"] = [_call_skeleton(tool) for tool in body["tools"]]
    return out


def _skeleton(message: Any) -> Any:
    if not isinstance(message, dict):
        return None
    out = {k: message[k] for k in ("role", "id", "tool_call_id") if isinstance(message.get(k), str)}
    if message.get("role") in TOOL_ROLES and isinstance(message.get("name"), str):
        out["name"] = message["name"]
    if isinstance(message.get("tool_calls"), list):
        out["tool_calls"] = [_call_skeleton(call) for call in message["tool_calls"]]
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        out["function_call"] = _name_only(legacy)
    return out


def _call_skeleton(call: Any) -> Any:
    if not isinstance(call, dict):
        return None
    out = {k: call[k] for k in ("id", "type") if isinstance(call.get(k), str)}
    function = call.get("function")
    if isinstance(function, dict):
        out["function"] = _name_only(function)
    return out


def _name_only(function: dict[str, Any]) -> dict[str, Any]:
    name = function.get("name")
    return {"name": name} if isinstance(name, str) else {}


_MODES: dict[str, Callable[[Any], Any]] = {
    "full": _full,
    "redacted": _redacted,
    "none": _structure,
}
