"""SQL shared by the SQLite and PostgreSQL backends: page queries, stats, retention.

Both schemas have the same shape (see :mod:`.tables`): ``records`` with the summary columns
first and the bodies last (SQLite then never reads a body's overflow pages for a summary), and
``record_rules (rule, created_at, record_id)`` so a rule filter walks one index in page order.
Pages are keyset-paginated on ``(created_at, id)``: no OFFSET, no scan per page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from proxy.repairlog.base import (
    ALL_FIELDS,
    SCALAR_FIELDS,
    SUMMARY_FIELDS,
    RecordQuery,
    empty_stats,
    encode_cursor,
)
from proxy.repairlog.record import utcnow


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the two SQL backends, and the statements both run, in its terms."""

    name: str
    ph: str  # the parameter placeholder
    ts: Callable[[datetime], Any]  # a datetime as a query parameter
    json: Callable[[str], str]  # a JSON column as selected text

    def columns(self, names: tuple[str, ...], alias: str = "r") -> str:
        scalars = set(SCALAR_FIELDS) | {"upstream_error", "packed"}
        return ", ".join(
            f"{alias}.{name}" if name in scalars else self.json(f"{alias}.{name}") for name in names
        )

    def page(self, q: RecordQuery) -> tuple[str, list[Any]]:
        """One page of summaries (``limit + 1`` rows, the extra one says there is a next page)."""
        where: list[str] = []
        params: list[Any] = []
        if q.rule is not None:
            # Driven by the (rule, created_at, record_id) key: the join only fetches page rows.
            source = "record_rules k CROSS JOIN records r"
            when, key = "k.created_at", "k.record_id"
            where += [f"k.rule = {self.ph}", "r.id = k.record_id"]
            params.append(q.rule)
        elif q.conversation is not None:
            # A conversation's turns: its first records and the repeats stored in ``turns``.
            names = ", ".join(SUMMARY_FIELDS)
            source = (
                f"(SELECT {names} FROM records WHERE conversation = {self.ph}"
                f" UNION ALL SELECT {names} FROM turns WHERE conversation = {self.ph}) r"
            )
            params += [q.conversation, q.conversation]
            when, key = "r.created_at", "r.id"
        else:
            source = "records r"
            when, key = "r.created_at", "r.id"
        if q.conversation is not None and q.rule is not None:
            where.append(f"r.conversation = {self.ph}")
            params.append(q.conversation)
        for name, value in q.filters().items():
            where.append(f"r.{name} = {self.ph}")
            params.append(value)
        if q.since is not None:
            where.append(f"{when} >= {self.ph}")
            params.append(self.ts(q.since))
        if q.until is not None:
            where.append(f"{when} < {self.ph}")
            params.append(self.ts(q.until))
        if q.after is not None:
            where.append(f"({when}, {key}) < ({self.ph}, {self.ph})")
            params += [self.ts(q.after[0]), q.after[1]]
        sql = f"SELECT {self.columns(SUMMARY_FIELDS)} FROM {source}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY {when} DESC, {key} DESC LIMIT {self.ph}"
        params.append(q.limit + 1)
        return sql, params

    def record(self, table: str = "records") -> str:
        """One whole record (of ``records`` or ``turns``), with ``packed`` (whether its bodies are
        skeletons) last."""
        return (
            f"SELECT {self.columns((*ALL_FIELDS, 'packed'))} FROM {table} r WHERE r.id = {self.ph}"
        )

    def first(self) -> str:
        """The first record of a conversation with a finding key (what a repeat points at)."""
        return (
            f"SELECT id FROM records WHERE conversation = {self.ph} AND finding_key = {self.ph}"
            " ORDER BY created_at, id LIMIT 1"
        )

    def bump(self) -> str:
        """Count ``n`` repeats on a first record, last seen at ``moment``: parameters (n,
        moment, moment, id)."""
        ph = self.ph
        return (
            f"UPDATE records SET repeats = repeats + {ph}, last_seen = CASE WHEN last_seen IS NULL"
            f" OR last_seen < {ph} THEN {ph} ELSE last_seen END WHERE id = {ph}"
        )

    def collect(self) -> str:
        """Delete the payloads no kept record can reference; the parameter is the oldest kept
        record's time in Unix seconds (a huge number when none is kept)."""
        return f"DELETE FROM payloads WHERE last_used < {self.ph} - {LAST_USED_SLACK}"

    def stats(
        self, since: datetime | None, owner: str | None = None
    ) -> tuple[list[tuple[str, str]], list[Any]]:
        """(group name, SQL) pairs answering ``GROUP BY`` counts, and the parameters of each
        (the same for all: ``since``, then ``owner``, each when given)."""
        conds: list[str] = []
        params: list[Any] = []
        if since is not None:
            conds.append(f"created_at >= {self.ph}")
            params.append(self.ts(since))
        if owner is not None:
            conds.append(f"owner = {self.ph}")
            params.append(owner)

        def where(*more: str) -> str:
            both = [*more, *conds]
            return f" WHERE {' AND '.join(both)}" if both else ""

        # A rule's rows carry no owner: with one, they are counted through their record.
        rules = "record_rules"
        if owner is not None:
            rules = "(SELECT k.rule, k.created_at, r.owner FROM record_rules k"
            rules += " JOIN records r ON r.id = k.record_id) AS k"
        kinds = where("upstream_error_kind IS NOT NULL")
        endings = where("ending IS NOT NULL")
        queries = [
            ("by_outcome", f"SELECT outcome, count(*) FROM records{where()} GROUP BY outcome"),
            ("by_upstream", f"SELECT upstream, count(*) FROM records{where()} GROUP BY upstream"),
            ("by_rule", f"SELECT rule, count(*) FROM {rules}{where()} GROUP BY rule"),
            (
                "by_error_kind",
                f"SELECT upstream_error_kind, count(*) FROM records{kinds}"
                " GROUP BY upstream_error_kind",
            ),
            ("by_ending", f"SELECT ending, count(*) FROM records{endings} GROUP BY ending"),
            # Repeats live in ``turns``, counted on their first records: how many there were.
            ("repeats", f"SELECT 'turns', count(*) FROM turns{where()}"),
        ]
        return queries, params


def page_of(rows: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], str | None]:
    """Cut the extra row and name the next page."""
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    last = rows[-1]
    return rows, encode_cursor(last["created_at"], last["id"])


#: The time of the oldest record or turn kept (NULL when there is none).
OLDEST = (
    "SELECT min(m) FROM (SELECT min(created_at) AS m FROM records"
    " UNION ALL SELECT min(created_at) FROM turns) AS oldest"
)


def epoch(moment: datetime) -> int:
    """A record time as the Unix seconds of ``payloads.last_used``."""
    return int(moment.timestamp())


#: How stale a payload's ``last_used`` may get before a write bumps it (seconds): a payload in
#: use is rewritten at most once per period, and outlives its last record by at most that.
LAST_USED_SLACK = 3600


#: How long a writer trusts a digest it stored, from its ``last_used``, without asking
#: (:class:`~proxy.repairlog.carry.StoredDigests`): half the slack, room for clocks that disagree.
TRUSTED_FOR = LAST_USED_SLACK // 2


def kept_since(oldest: datetime | None) -> int:
    """Collection's reference time (Unix seconds): the oldest kept record's, never later than
    now. Payloads used within :data:`LAST_USED_SLACK` before it stay, so one used within the
    slack of now is never collected, by whichever process collects: what lets a writer trust
    a digest it stored a moment ago. With no record kept, payloads unused for the slack go."""
    now = epoch(utcnow())
    return now if oldest is None else min(epoch(oldest), now)


def stats_from(since: datetime | None, counts: dict[str, list[tuple[Any, int]]]) -> dict[str, Any]:
    """``GET /repairs/stats``'s answer from the rows of each :meth:`Dialect.stats` query."""
    stats = empty_stats(since)
    stats.update((group, dict(rows)) for group, rows in counts.items())
    stats["total"] = sum(stats["by_outcome"].values())
    stats["repeats"] = sum(stats["repeats"].values())
    return stats


#: The log's own secrets (``secrets``): a new one is inserted unless one of its name is there,
#: then the one kept is read (whichever process inserted it first).
SECRET_INSERT = (
    "INSERT INTO secrets (name, value) VALUES ({ph}, {ph}) ON CONFLICT (name) DO NOTHING"
)
SECRET_SELECT = "SELECT value FROM secrets WHERE name = {ph}"
