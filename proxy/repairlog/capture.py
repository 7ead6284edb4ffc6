"""What of a request body is stored: ``repair_log.capture = full | redacted | none``.

- ``full``: the bodies as they are, minus every field that holds a credential by its name, at
  any depth (:mod:`proxy.repairlog.credentials`; every mode drops them first).
- ``redacted``: every string becomes ``{"length": n, "hmac_sha256": hex}`` except roles, ids,
  types and the model when they look like identifiers: what was changed stays visible, what was
  said does not. Names (a person's, a tool's) are text too; a key the wire APIs do not define (a
  client's extra field, a JSON schema's property name) is stored as a digest
  (:mod:`proxy.repairlog.vocabulary`).
- ``none``: structure only: the model, the stream flag, and per item its role, type and ids
  (with those of chat's tool calls and of Messages' content blocks).

Digests are keyed (HMAC-SHA-256 with the log's own secret, :class:`Digests`): a plain hash of a
short value (a yes, a name, a port) would fall to a dictionary; one keyed with a secret the
reader of the records never sees does not. The same value gives the same digest in one log, so
two records can still be compared.

The upstream's error body is kept in full mode (bounded by ``max_error_body_bytes``): it is
what the provider said, and it is what explains an ``upstream_rejected`` record. Upstreams echo
client values in it, so ``redacted`` and ``none`` keep its length and digest only (its
classification stays); they keep the findings' rules, actions and paths (keys hashed as in the
body) but not their details, which quote the request.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable
from typing import Any

from proxy.core.forward import found_at
from proxy.core.wire import Wire, wire_of_record
from proxy.repairlog.conversation import conversation_key
from proxy.repairlog.credentials import Checked, listed_clear, without_credentials
from proxy.repairlog.ends import Ends, ends_of
from proxy.repairlog.record import Record, copied
from proxy.repairlog.vocabulary import stored_key, stored_path

#: Strings kept verbatim in redacted mode (identifiers, not text) ...
KEPT = frozenset({"role", "id", "tool_call_id", "type", "model", "object"})
#: ... when they look like one: a client can put any text in a ``type`` or an id.
IDENTIFIER = re.compile(r"[\w.:/@+-]{1,256}", re.ASCII)
#: What a finding's detail and an upstream error become when only ``full`` keeps them.
REDACTED = "[redacted]"


class Digests:
    """Keyed digests of a log's client strings: HMAC-SHA-256 under the log's secret ``key``."""

    __slots__ = ("_base",)

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a capture key has at least 16 bytes")
        self._base = hmac.new(key, digestmod=hashlib.sha256)  # copied per value: keyed once

    def hex(self, text: str) -> str:
        mac = self._base.copy()
        mac.update(text.encode("utf-8", "surrogatepass"))
        return mac.hexdigest()

    def text(self, text: str) -> dict[str, Any]:
        """The redacted form of a string: its length and keyed digest."""
        return {"length": len(text), "hmac_sha256": self.hex(text)}

    def key(self, key: str) -> str:
        """A body key as stored when it is no key of the APIs: ``#`` and 16 hex digits."""
        return "#" + self.hex(key)[:16]


def apply_capture(
    record: Record,
    mode: str,
    max_error_bytes: int,
    digests: Digests | None = None,
    checked: Checked | None = None,
) -> Record:
    """A copy of ``record`` holding only what ``mode`` keeps (its wire API's row says where the
    history is and which keys are ids); ``digests`` (the log's key) is needed unless ``full``.
    ``checked``: the writer's memory of each conversation's last body (searched for credentials
    only where it grew)."""
    keep = _MODES[mode]
    wire = wire_of_record(record.path, record.received)
    if digests is None and mode != "full":
        raise ValueError(f"capture {mode!r} needs the log's key")

    conversation = record.conversation or conversation_key(
        record.path, record.received, (record.upstream, record.owner)
    )
    received, clear, ends = _received(record, checked, conversation)

    def transform(body: Any) -> Any:
        if body is record.received:
            kept = received
        else:  # the bodies sent upstream share their items with ``clear``: not looked at again
            kept = body if body is clear else without_credentials(body, clear)
        return keep(kept, wire, digests)

    def error(text: str | None) -> str | None:
        if mode == "full":
            return truncate(text, max_error_bytes)
        assert digests is not None
        return _error_digest(text, digests)

    def finding(found: Any) -> Any:
        assert digests is not None
        return _finding(found, digests)

    return copied(
        record,
        conversation=conversation,
        ends=ends,
        received=transform(record.received),
        forwarded=None if record.forwarded is None else transform(record.forwarded),
        findings=record.findings if mode == "full" else [finding(f) for f in record.findings],
        upstream_error=error(record.upstream_error),
        attempts=None
        if record.attempts is None
        else [_attempt(a, transform, error) for a in record.attempts],
    )


def _received(
    record: Record, checked: Checked | None, conversation: str | None
) -> tuple[Any, Any, Ends | None]:
    """The received body without credentials, a body known to hold none (or None) that the
    others share most values with, and how the received history shares items with the
    forwarded one (:mod:`.ends`; for the packer). A repaired body's history was serialised as
    it was sent (:attr:`Record.listed`): that JSON is searched (where it grew since the
    conversation's last), and the received body checked only where it differs from the
    forwarded one, instead of serialising the whole received body again (issue 34)."""
    forwarded, listed = record.forwarded, record.listed
    key = None if conversation is None else conversation + ":listed"
    if listed is not None and listed_clear(forwarded, listed, checked, key):
        ends = _history_ends(record.received, forwarded, listed[0])
        return without_credentials(record.received, forwarded, ends=ends), forwarded, ends
    received = without_credentials(record.received, None, checked, conversation)
    return received, (record.received if received is record.received else None), None


def _history_ends(received: Any, forwarded: Any, history: list[Any]) -> Ends | None:
    """How the received body's list under the name of ``forwarded``'s ``history`` shares items
    with it (None when there is no such list, or it is the very same)."""
    if type(received) is dict and type(forwarded) is dict:
        for name, value in forwarded.items():
            if value is history:
                items = received.get(name)
                if type(items) is not list or items is history:  # never compared then
                    return None
                return ends_of(items, history)
    return None


def _attempt(
    attempt: dict[str, Any], transform: Any, error: Callable[[str | None], str | None]
) -> dict[str, Any]:
    """One attempt of a retried request, its body and error kept as ``mode`` keeps them."""
    return {
        **attempt,
        "forwarded": transform(attempt.get("forwarded")),
        "upstream_error": error(attempt.get("upstream_error")),
    }


def _finding(finding: Any, digests: Digests) -> Any:
    """A finding without its detail (it quotes the request), its path keyed as the body."""
    if not isinstance(finding, dict):
        return finding
    out = dict(finding)
    if isinstance(out.get("path"), str):
        out["path"] = stored_path(out["path"], digests.key)
    if out.get("detail"):
        out["detail"] = REDACTED
    return out


def _error_digest(text: str | None, digests: Digests) -> str | None:
    """An upstream error as ``redacted`` and ``none`` keep it: its length and digest."""
    if text is None:
        return None
    return f"{REDACTED} {len(text)} characters, hmac-sha256 {digests.hex(text)[:16]}"


def capture_batch(
    batch: list[Record],
    mode: str,
    max_error_bytes: int,
    digests: Digests | None = None,
    checked: Checked | None = None,
) -> list[Record]:
    """:func:`apply_capture` over a batch (the writer runs it off the event loop)."""
    return [apply_capture(record, mode, max_error_bytes, digests, checked) for record in batch]


def truncate(text: str | None, max_bytes: int) -> str | None:
    """At most ``max_bytes`` of UTF-8, cut on a character boundary."""
    if text is None or len(text) * 4 <= max_bytes:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def _full(body: Any, wire: Wire, digests: Digests | None) -> Any:
    return body


def _redacted(body: Any, wire: Wire, digests: Digests | None) -> Any:
    assert digests is not None
    return _redact(body, None, KEPT.union(wire.id_keys), digests)


def _redact(value: Any, key: str | None, kept: frozenset[str], digests: Digests) -> Any:
    if isinstance(value, str):
        return value if key in kept and IDENTIFIER.fullmatch(value) else digests.text(value)
    if isinstance(value, dict):
        return {stored_key(k, digests.key): _redact(v, k, kept, digests) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(item, key, kept, digests) for item in value]
    return value  # numbers, booleans, null


def _structure(body: Any, wire: Wire, digests: Digests | None) -> Any:
    if not isinstance(body, dict):
        return None
    assert digests is not None
    out = {key: _identifier(body[key], digests) for key in ("model", "stream") if key in body}
    history = wire.location(body)  # the tools sit beside the history (the request's fields)
    for location in (history, (*history[:-1], "tools")):
        value = found_at(body, location)
        if isinstance(value, list):
            holder = out
            for key in location[:-1]:
                holder = holder.setdefault(key, {})
            holder[location[-1]] = [_skeleton(item, wire, digests) for item in value]
    return out


def _skeleton(item: Any, wire: Wire, digests: Digests) -> Any:
    """An item's roles, types and ids, and those of the nested structures the wire API's row
    names (chat's tool calls, Messages' content blocks)."""
    if not isinstance(item, dict):
        return None
    keys = ("role", "type", *wire.id_keys)
    out = {k: _identifier(item[k], digests) for k in keys if isinstance(item.get(k), str)}
    for key in wire.skeleton_keys:
        value = item.get(key)
        if isinstance(value, dict):
            out[key] = _skeleton(value, wire, digests)
        elif isinstance(value, list):
            out[key] = [_skeleton(part, wire, digests) for part in value]
    return out


def _identifier(value: Any, digests: Digests) -> Any:
    """``value`` when it is no string or looks like an identifier, else its digest."""
    if not isinstance(value, str) or IDENTIFIER.fullmatch(value):
        return value
    return digests.text(value)


_MODES: dict[str, Callable[[Any, Wire, Digests | None], Any]] = {
    "full": _full,
    "redacted": _redacted,
    "none": _structure,
}
