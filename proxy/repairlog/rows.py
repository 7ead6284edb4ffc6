"""Records as database rows (the column order of :data:`~proxy.repairlog.base.ALL_FIELDS`), their
bodies packed (:mod:`.packing`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from proxy.repairlog.base import ALL_FIELDS, dumps, rule_counts
from proxy.repairlog.conversation import RepeatKey, finding_key
from proxy.repairlog.ends import Ends
from proxy.repairlog.packing import Listed, Packer
from proxy.repairlog.record import Record, utcnow

#: The columns a backend writes: every field of a record, then the finding key (what a repeat
#: is matched on) and ``packed`` (1: the bodies are skeletons, :mod:`~proxy.repairlog.payloads`;
#: NULL in rows written before content addressing, whose bodies are stored whole).
STORED_FIELDS = (*ALL_FIELDS, "finding_key", "packed")


def record_row(
    record: Record,
    ts: Callable[[datetime], Any],
    blob: Callable[[bytes], Any],
    packer: Packer,
    keys: Mapping[str, RepeatKey],
) -> tuple[Any, ...]:
    """One ``records`` row (:data:`STORED_FIELDS`); ``ts`` and ``blob`` adapt timestamps and
    JSON to the driver; the bodies are packed by ``packer``, which collects their blobs; the
    finding key is the one ``keys`` (:func:`~proxy.repairlog.conversation.repeat_keys`) holds
    (computed here for a record without a conversation, which has none there)."""

    def json(value: Any) -> Any:
        return None if value is None else blob(dumps(value))

    bodies = pack_bodies(
        {
            "received": record.received,
            "forwarded": record.forwarded,
            "attempts": record.attempts,
            # A repeat's findings are its first record's: stored once, as one value.
            **({"findings": record.findings} if record.repeat_of is not None else {}),
        },
        packer,
        record.conversation,
        record.listed,
        record.ends,
    )

    key = keys.get(record.id)
    return (
        record.id,
        ts(record.created_at),
        record.upstream,
        record.model,
        record.path,
        record.stream,
        record.outcome,
        record.upstream_status,
        record.upstream_error_kind,
        record.request_id,
        record.duration_ms,
        record.sanitize_ms,
        record.upstream_ms,
        record.status,
        record.proxy_error,
        record.ending,
        record.conversation,
        record.client,
        record.repeat_of,
        record.repeats,
        None if record.last_seen is None else ts(record.last_seen),
        record.owner,
        blob(dumps(rule_counts(record.findings))),
        blob(dumps(bodies.get("findings", record.findings))),
        record.upstream_error,
        json(bodies["received"]),
        json(bodies["forwarded"]),
        json(bodies["attempts"]),
        finding_key(record) if key is None else key[1],
        1,
    )


def pack_bodies(
    row: dict[str, Any],
    packer: Packer,
    conversation: str | None = None,
    listed: tuple[Any, bytes] | None = None,
    ends: Ends | None = None,
) -> dict[str, Any]:
    """``row``'s bodies packed: one whole (against its ``conversation``'s previous turn), the
    other and each attempt's ``forwarded`` as patches against it; ``findings``, when given, as
    one value (a repeat's findings are its first record's, stored once).

    The whole one is ``received``, unless ``listed`` (see :attr:`Record.listed`) holds a list of
    ``forwarded``: its JSON is at hand, so ``forwarded`` is packed whole and ``received`` as
    the patch (:func:`unpack_bodies` tells which from the skeletons), its history's items shared
    with ``forwarded`` as ``ends`` says when it was worked out for them (:attr:`Record.ends`).
    """
    out = dict(row)
    if out.get("findings") is not None:
        out["findings"] = packer.value(out["findings"])
    whole, patched = "received", "forwarded"
    if listed is not None and _holds(out.get("forwarded"), listed[0]):
        whole, patched = patched, whole
    base: dict[str, Listed] | None = None
    if out.get(whole) is not None:
        out[whole] = packer.body(out[whole], conversation=conversation, listed=listed)
        base = packer.sequences
    if out.get(patched) is not None:
        out[patched] = packer.body(out[patched], base, ends=ends)
    if out.get("attempts"):
        out["attempts"] = [_packed_attempt(a, packer, base) for a in out["attempts"]]
    return out


def _holds(body: Any, items: Any) -> bool:
    return isinstance(body, dict) and any(value is items for value in body.values())


def _packed_attempt(attempt: Any, packer: Packer, base: dict[str, Listed] | None) -> Any:
    if not isinstance(attempt, dict) or attempt.get("forwarded") is None:
        return attempt
    return {**attempt, "forwarded": packer.body(attempt["forwarded"], base)}


def rule_rows(record: Record, ts: Callable[[datetime], Any]) -> list[tuple[Any, ...]]:
    """``record_rules`` rows: (rule, created_at, record_id, findings)."""
    when = ts(record.created_at)
    return [(rule, when, record.id, count) for rule, count in rule_counts(record.findings).items()]


def cutoff_for(retention_days: float) -> datetime | None:
    """The moment before which records are too old; None when that is before year 1."""
    try:
        return utcnow() - timedelta(days=retention_days)
    except OverflowError:
        return None
