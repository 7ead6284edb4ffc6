"""The repair-log protocol, the query it answers, and the row shape every backend stores.

A backend raises :class:`~proxy.errors.RepairLogUnavailable` when it cannot be reached or written
(disk, server, schema), :class:`~proxy.errors.RepairLogError` for anything else it could not do;
a bad query parameter is :class:`~proxy.errors.InvalidQuery` (``.param`` names it).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from proxy.endings import ENDINGS
from proxy.errors import InvalidQuery, RepairLogError
from proxy.repairlog.record import OUTCOMES, Record

MAX_LIMIT = 500
DEFAULT_LIMIT = 50

#: Columns of a summary, in storage order; the bodies come after them (see :data:`BODY_FIELDS`).
SCALAR_FIELDS = (
    "id",
    "created_at",
    "upstream",
    "model",
    "path",
    "stream",
    "outcome",
    "upstream_status",
    "upstream_error_kind",
    "request_id",
    "duration_ms",
    "sanitize_ms",
    "upstream_ms",
    "status",
    "proxy_error",
    "ending",
    "conversation",
    "client",
    "repeat_of",
    "repeats",
    "last_seen",
    "owner",
)
SUMMARY_JSON_FIELDS = ("rules", "findings")
BODY_FIELDS = ("upstream_error", "received", "forwarded", "attempts")
SUMMARY_FIELDS = SCALAR_FIELDS + SUMMARY_JSON_FIELDS
ALL_FIELDS = SUMMARY_FIELDS + BODY_FIELDS


def iso(moment: datetime) -> str:
    """Fixed-width ISO-8601 UTC (microseconds, ``+00:00``): sorts as text like it does as time."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        if moment.tzinfo is not UTC:  # a record's own times are UTC already
            moment = moment.astimezone(UTC)
        return moment.isoformat(timespec="microseconds")
    except OverflowError as exc:
        raise ValueError(f"{moment!r} is out of range") from exc


def utc(moment: datetime, param: str) -> datetime:
    """``moment`` in UTC; a naive datetime is taken as UTC."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise InvalidQuery(param, f"{param} is out of range.") from None


def encode_cursor(created_at: str, record_id: str) -> str:
    """An opaque cursor naming the last record of a page."""
    raw = orjson.dumps([created_at, record_id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (created_at, id) a cursor names; :class:`InvalidQuery` when it is not ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, record_id = orjson.loads(raw)
        parsed = datetime.fromisoformat(created_at)
        moment = parsed.astimezone(UTC) if parsed.tzinfo is not None else None
    except (binascii.Error, ValueError, TypeError, OverflowError):
        raise InvalidQuery("cursor", "cursor is not a cursor this API returned.") from None
    if moment is None or not isinstance(record_id, str) or "\x00" in record_id:
        raise InvalidQuery("cursor", "cursor is not a cursor this API returned.")
    return moment, record_id


@dataclass(frozen=True, slots=True)
class RecordQuery:
    """Filters and page of ``GET /repairs``. ``since`` is inclusive, ``until`` exclusive.

    Construction validates everything (raising :class:`InvalidQuery`), so backends get plain,
    safe values: aware UTC datetimes, no NUL characters, ``1 <= limit <= 500``.
    """

    upstream: str | None = None
    model: str | None = None
    outcome: str | None = None
    rule: str | None = None
    #: A conversation's turns: its first records and their repeats (which are not listed
    #: otherwise: they count on their first record).
    conversation: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None
    ending: str | None = None
    #: Only the records this client key sent (its digest, :attr:`Record.owner`).
    owner: str | None = None
    after: tuple[datetime, str] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        names = (
            "upstream",
            "model",
            "outcome",
            "rule",
            "conversation",
            "cursor",
            "ending",
            "owner",
        )
        for name in names:
            value = getattr(self, name)
            if value is not None and "\x00" in value:
                raise InvalidQuery(name, f"{name} must not contain NUL characters.")
        if self.outcome is not None and self.outcome not in OUTCOMES:
            raise InvalidQuery("outcome", f"outcome must be one of {', '.join(OUTCOMES)}.")
        if self.ending is not None and self.ending not in ENDINGS:
            raise InvalidQuery("ending", f"ending must be one of {', '.join(ENDINGS)}.")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidQuery("limit", f"limit must be between 1 and {MAX_LIMIT}.")
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, utc(value, name))
        if self.cursor is not None:
            object.__setattr__(self, "after", decode_cursor(self.cursor))

    def filters(self) -> dict[str, str]:
        """The equality filters on record columns that are set."""
        pairs = (
            ("upstream", self.upstream),
            ("model", self.model),
            ("outcome", self.outcome),
            ("ending", self.ending),
            ("owner", self.owner),
        )
        return {name: value for name, value in pairs if value is not None}


def rule_counts(findings: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Findings per rule, in order of first appearance."""
    counts: dict[str, int] = {}
    for finding in findings:
        rule = str(finding.get("rule", ""))
        counts[rule] = counts.get(rule, 0) + 1
    return counts


def stored(record: Record) -> dict[str, Any]:
    """The JSON-ready dict of a record, as every backend returns it from ``get``."""
    return {
        "id": record.id,
        "created_at": iso(record.created_at),
        "upstream": record.upstream,
        "model": record.model,
        "path": record.path,
        "stream": record.stream,
        "outcome": record.outcome,
        "upstream_status": record.upstream_status,
        "upstream_error_kind": record.upstream_error_kind,
        "request_id": record.request_id,
        "duration_ms": record.duration_ms,
        "sanitize_ms": record.sanitize_ms,
        "upstream_ms": record.upstream_ms,
        "status": record.status,
        "proxy_error": record.proxy_error,
        "ending": record.ending,
        "conversation": record.conversation,
        "client": record.client,
        "repeat_of": record.repeat_of,
        "repeats": record.repeats,
        "last_seen": None if record.last_seen is None else iso(record.last_seen),
        "owner": record.owner,
        "rules": rule_counts(record.findings),
        "findings": record.findings,
        "upstream_error": record.upstream_error,
        "received": record.received,
        "forwarded": record.forwarded,
        "attempts": record.attempts,
    }


def dumps(value: Any) -> bytes:
    """orjson, with an unserialisable value reported as a repair-log error."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as exc:
        raise RepairLogError(f"record is not JSON-serialisable: {exc}") from exc


def empty_stats(since: datetime | None) -> dict[str, Any]:
    return {
        "total": 0,
        "since": None if since is None else iso(since),
        "by_outcome": {},
        "by_rule": {},
        "by_upstream": {},
        "by_error_kind": {},
        "by_ending": {},
        "repeats": 0,
    }


class RepairLog(Protocol):
    """Durable storage of records. Every method may raise :class:`RepairLogError`."""

    async def open(self) -> None:
        """Connect, create and migrate the schema."""

    async def close(self) -> None:
        """Release connections and threads; the log can be opened again afterwards."""

    async def write(self, records: Sequence[Record]) -> None:
        """Store a batch (already captured by the writer) in one transaction."""

    async def get(self, record_id: str) -> dict[str, Any] | None:
        """The full stored record as a JSON-ready dict, or None."""

    async def query(self, q: RecordQuery) -> tuple[list[dict[str, Any]], str | None]:
        """Summaries (no bodies), newest first, and the cursor of the next page."""

    async def stats(self, since: datetime | None, owner: str | None = None) -> dict[str, Any]:
        """Counts by outcome, rule, upstream and upstream error kind (from ``since`` on; of
        ``owner``'s records only, when given)."""

    async def delete(self, before: datetime) -> int:
        """Delete records created before ``before``; the number deleted."""

    async def prune(self, retention_days: float, max_records: int) -> int:
        """Apply retention: drop records older than ``retention_days`` and all but the newest
        ``max_records``; the number deleted."""

    async def ping(self) -> None:
        """Return when the backend can be written; raise :class:`RepairLogUnavailable` if not."""

    async def capture_key(self) -> bytes:
        """The log's own secret keying the digests of ``capture = "redacted"``: made once, on
        first use, and kept in the log (every process writing it shares it)."""
