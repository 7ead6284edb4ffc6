"""What of a request body is stored: ``repair_log.capture = full | redacted | none``.

- ``full``: the bodies as they are (minus any top-level credential field, see
  :data:`SECRET_KEYS`).
- ``redacted``: every string becomes ``{"length": n, "sha256": hex}`` except roles, ids, tool
  names, types and the model: what was changed stays visible, what was said does not.
- ``none``: structure only: the model, the stream flag, and per item its role, type, ids and
  tool names (with those of chat's tool calls and of Messages' content blocks).

The upstream's error body is kept in every mode (bounded by ``max_error_body_bytes``): it is
what the provider said, and it is what explains an ``upstream_rejected`` record.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

from proxy.core.wire import Wire, wire_of_record
from proxy.repairlog.conversation import conversation_key
from proxy.repairlog.record import Record

#: Top-level body fields that can carry a credential; never stored.
SECRET_KEYS = frozenset({"api_key", "apikey", "api-key", "authorization", "x-api-key", "key"})
#: Strings kept verbatim in redacted mode (identifiers and names, not text).
KEPT = frozenset({"role", "id", "tool_call_id", "type", "model", "object"})
#: Roles whose ``name`` is a tool's name (on user/system/assistant it is a person's name).
TOOL_ROLES = frozenset({"tool", "function"})


def apply_capture(record: Record, mode: str, max_error_bytes: int) -> Record:
    """A copy of ``record`` holding only what ``mode`` keeps (its wire API's row says where the
    history is and which keys are ids)."""
    keep = _MODES[mode]
    wire = wire_of_record(record.path, record.received)

    def transform(body: Any) -> Any:
        return keep(body, wire)

    return dataclasses.replace(
        record,
        conversation=record.conversation or conversation_key(record.path, record.received),
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


def _full(body: Any, wire: Wire) -> Any:
    return body


def _redacted(body: Any, wire: Wire) -> Any:
    kept = KEPT.union(wire.id_keys)
    if not isinstance(body, dict):
        return _redact(body, None, kept)
    out = {}
    for key, value in body.items():
        if key == wire.history_key and isinstance(value, list):
            out[key] = [_redact_message(m, kept) for m in value]
        else:
            out[key] = _redact(value, key, kept)
    return out


def _redact_message(message: Any, kept: frozenset[str]) -> Any:
    if not isinstance(message, dict):
        return _redact(message, None, kept)
    tool_role = message.get("role") in TOOL_ROLES
    return {
        key: value
        if key == "name" and tool_role and isinstance(value, str)
        else _redact(value, key, kept)
        for key, value in message.items()
    }


def _redact(value: Any, key: str | None, kept: frozenset[str]) -> Any:
    if isinstance(value, str):
        return value if key in kept else digest(value)
    if isinstance(value, dict):
        # Inside a dict (tool calls, tools, parts) ``name`` names a function, not a person.
        return {
            k: v if k == "name" and isinstance(v, str) else _redact(v, k, kept)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(item, key, kept) for item in value]
    return value  # numbers, booleans, null


def _structure(body: Any, wire: Wire) -> Any:
    if not isinstance(body, dict):
        return None
    out = {key: body[key] for key in ("model", "stream") if key in body}
    for key in (wire.history_key, "tools"):
        if isinstance(body.get(key), list):
            out[key] = [_skeleton(item, wire) for item in body[key]]
    return out


def _skeleton(item: Any, wire: Wire) -> Any:
    """An item's roles, types, ids and tool names, and those of the nested structures the
    wire API's row names (chat's tool calls, Messages' content blocks)."""
    if not isinstance(item, dict):
        return None
    keys = ("role", "type", *wire.id_keys)
    out = {k: item[k] for k in keys if isinstance(item.get(k), str)}
    role = item.get("role")
    if isinstance(item.get("name"), str) and (role is None or role in TOOL_ROLES):
        out["name"] = item["name"]  # a tool's name; on user/system/assistant a person's
    for key in wire.skeleton_keys:
        value = item.get(key)
        if isinstance(value, dict):
            out[key] = _skeleton(value, wire)
        elif isinstance(value, list):
            out[key] = [_skeleton(part, wire) for part in value]
    return out


_MODES: dict[str, Callable[[Any, Wire], Any]] = {
    "full": _full,
    "redacted": _redacted,
    "none": _structure,
}
