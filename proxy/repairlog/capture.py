"""What of a request body is stored: ``repair_log.capture = full | redacted | none``.

- ``full``: the bodies as they are (minus any top-level credential field, see
  :data:`SECRET_KEYS`).
- ``redacted``: every string becomes ``{"length": n, "sha256": hex}`` except roles, ids, types
  and the model when they look like identifiers: what was changed stays visible, what was said
  does not. Names (a person's, a tool's) are text too; a key the wire APIs do not define (a
  client's extra field, a JSON schema's property name) is stored as a digest
  (:mod:`proxy.repairlog.vocabulary`).
- ``none``: structure only: the model, the stream flag, and per item its role, type and ids
  (with those of chat's tool calls and of Messages' content blocks).

The upstream's error body is kept in full mode (bounded by ``max_error_body_bytes``): it is
what the provider said, and it is what explains an ``upstream_rejected`` record. Upstreams echo
client values in it, so ``redacted`` and ``none`` keep its length and digest only (its
classification stays); they keep the findings' rules, actions and paths (keys hashed as in the
body) but not their details, which quote the request.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from proxy.core.forward import found_at
from proxy.core.wire import Wire, wire_of_record
from proxy.repairlog.conversation import conversation_key
from proxy.repairlog.record import Record, copied
from proxy.repairlog.vocabulary import stored_key, stored_path

#: Top-level body fields that can carry a credential; never stored.
SECRET_KEYS = frozenset({"api_key", "apikey", "api-key", "authorization", "x-api-key", "key"})
#: Strings kept verbatim in redacted mode (identifiers, not text) ...
KEPT = frozenset({"role", "id", "tool_call_id", "type", "model", "object"})
#: ... when they look like one: a client can put any text in a ``type`` or an id.
IDENTIFIER = re.compile(r"[\w.:/@+-]{1,256}", re.ASCII)
#: What a finding's detail and an upstream error become when only ``full`` keeps them.
REDACTED = "[redacted]"


def apply_capture(record: Record, mode: str, max_error_bytes: int) -> Record:
    """A copy of ``record`` holding only what ``mode`` keeps (its wire API's row says where the
    history is and which keys are ids)."""
    keep = _MODES[mode]
    wire = wire_of_record(record.path, record.received)

    def transform(body: Any) -> Any:
        return keep(body, wire)

    def error(text: str | None) -> str | None:
        return truncate(text, max_error_bytes) if mode == "full" else _error_digest(text)

    return copied(
        record,
        conversation=record.conversation
        or conversation_key(record.path, record.received, (record.upstream, record.owner)),
        received=transform(_without_secrets(record.received)),
        forwarded=None
        if record.forwarded is None
        else transform(_without_secrets(record.forwarded)),
        findings=record.findings if mode == "full" else [_finding(f) for f in record.findings],
        upstream_error=error(record.upstream_error),
        attempts=None
        if record.attempts is None
        else [_attempt(a, transform, error) for a in record.attempts],
    )


def _attempt(
    attempt: dict[str, Any], transform: Any, error: Callable[[str | None], str | None]
) -> dict[str, Any]:
    """One attempt of a retried request, its body and error kept as ``mode`` keeps them."""
    return {
        **attempt,
        "forwarded": transform(_without_secrets(attempt.get("forwarded"))),
        "upstream_error": error(attempt.get("upstream_error")),
    }


def _finding(finding: Any) -> Any:
    """A finding without its detail (it quotes the request), its path keyed as the body."""
    if not isinstance(finding, dict):
        return finding
    out = dict(finding)
    if isinstance(out.get("path"), str):
        out["path"] = stored_path(out["path"])
    if out.get("detail"):
        out["detail"] = REDACTED
    return out


def _error_digest(text: str | None) -> str | None:
    """An upstream error as ``redacted`` and ``none`` keep it: its length and digest."""
    if text is None:
        return None
    found = digest(text)
    return f"{REDACTED} {found['length']} characters, sha256 {found['sha256'][:16]}"


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
    return _redact(body, None, KEPT.union(wire.id_keys))


def _redact(value: Any, key: str | None, kept: frozenset[str]) -> Any:
    if isinstance(value, str):
        return value if key in kept and IDENTIFIER.fullmatch(value) else digest(value)
    if isinstance(value, dict):
        return {stored_key(k): _redact(v, k, kept) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(item, key, kept) for item in value]
    return value  # numbers, booleans, null


def _structure(body: Any, wire: Wire) -> Any:
    if not isinstance(body, dict):
        return None
    out = {key: _identifier(body[key]) for key in ("model", "stream") if key in body}
    history = wire.location(body)  # the tools sit beside the history (the request's fields)
    for location in (history, (*history[:-1], "tools")):
        value = found_at(body, location)
        if isinstance(value, list):
            holder = out
            for key in location[:-1]:
                holder = holder.setdefault(key, {})
            holder[location[-1]] = [_skeleton(item, wire) for item in value]
    return out


def _skeleton(item: Any, wire: Wire) -> Any:
    """An item's roles, types and ids, and those of the nested structures the wire API's row
    names (chat's tool calls, Messages' content blocks)."""
    if not isinstance(item, dict):
        return None
    keys = ("role", "type", *wire.id_keys)
    out = {k: _identifier(item[k]) for k in keys if isinstance(item.get(k), str)}
    for key in wire.skeleton_keys:
        value = item.get(key)
        if isinstance(value, dict):
            out[key] = _skeleton(value, wire)
        elif isinstance(value, list):
            out[key] = [_skeleton(part, wire) for part in value]
    return out


def _identifier(value: Any) -> Any:
    """``value`` when it is no string or looks like an identifier, else its digest."""
    if not isinstance(value, str) or IDENTIFIER.fullmatch(value):
        return value
    return digest(value)


_MODES: dict[str, Callable[[Any, Wire], Any]] = {
    "full": _full,
    "redacted": _redacted,
    "none": _structure,
}
