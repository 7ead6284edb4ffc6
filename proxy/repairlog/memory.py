"""In-memory backend (``memory://``): the reference semantics, for tests and throwaway runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson

from proxy.errors import RepairLogUnavailable
from proxy.repairlog.base import BODY_FIELDS, RecordQuery, dumps, empty_stats, iso, stored
from proxy.repairlog.conversation import assign_repeats, repeat_keys
from proxy.repairlog.record import Record
from proxy.repairlog.rows import cutoff_for
from proxy.repairlog.sql import page_of


def _key(item: dict[str, Any]) -> tuple[str, str]:
    return item["created_at"], item["id"]


class MemoryRepairLog:
    """Records in a dict, stored as their JSON round trip (like a real backend would)."""

    def __init__(self) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self._turns: dict[str, dict[str, Any]] = {}  # repeats (see proxy.repairlog.conversation)
        self._open = False
        self._secret = os.urandom(32)  # the log's own: gone with it

    async def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        self._open = False

    async def write(self, records: Sequence[Record]) -> None:
        self._check()
        keys = repeat_keys(records)
        firsts = {
            key: item["id"]
            for item in sorted(self._records.values(), key=_key, reverse=True)
            if (key := (item["conversation"], item["finding_key"])) in keys.values()
        }
        bumps = assign_repeats(records, keys, firsts)
        for record in records:
            item = orjson.loads(dumps(stored(record)))
            item["finding_key"] = keys.get(record.id, (None, None))[1]
            table = self._records if record.repeat_of is None else self._turns
            table.setdefault(record.id, item)
        for first, (count, seen) in bumps.items():
            item = self._records[first]
            item["repeats"] += count
            item["last_seen"] = max(item["last_seen"] or "", iso(seen))

    async def get(self, record_id: str) -> dict[str, Any] | None:
        self._check()
        item = self._records.get(record_id) or self._turns.get(record_id)
        if item is None:
            return None
        found: dict[str, Any] = orjson.loads(orjson.dumps(item))
        del found["finding_key"]
        return found

    async def query(self, q: RecordQuery) -> tuple[list[dict[str, Any]], str | None]:
        self._check()
        items = list(self._records.values())
        if q.conversation is not None:
            items += self._turns.values()
        matches = sorted(filter(_matcher(q), items), key=_key, reverse=True)
        page = [
            {k: v for k, v in item.items() if k not in BODY_FIELDS and k != "finding_key"}
            for item in matches[: q.limit + 1]
        ]
        return page_of(page, q.limit)

    async def capture_key(self) -> bytes:
        self._check()
        return self._secret

    async def stats(self, since: datetime | None, owner: str | None = None) -> dict[str, Any]:
        self._check()
        stats = empty_stats(since)
        floor = "" if since is None else iso(since)
        for item in self._records.values():
            if item["created_at"] < floor or (owner is not None and item["owner"] != owner):
                continue
            stats["total"] += 1
            _bump(stats["by_outcome"], [item["outcome"]])
            _bump(stats["by_upstream"], [item["upstream"]])
            _bump(stats["by_rule"], item["rules"])
            if item["upstream_error_kind"] is not None:
                _bump(stats["by_error_kind"], [item["upstream_error_kind"]])
            if item["ending"] is not None:
                _bump(stats["by_ending"], [item["ending"]])
        stats["repeats"] = sum(
            1
            for item in self._turns.values()
            if item["created_at"] >= floor and (owner is None or item["owner"] == owner)
        )
        return stats

    async def delete(self, before: datetime) -> int:
        self._check()
        limit = iso(before)
        turns = [k for k, v in self._turns.items() if v["created_at"] < limit]
        for k in turns:
            del self._turns[k]
        return len(turns) + self._drop(
            k for k, v in self._records.items() if v["created_at"] < limit
        )

    async def prune(self, retention_days: float, max_records: int) -> int:
        self._check()
        cutoff = cutoff_for(retention_days)
        deleted = 0 if cutoff is None else await self.delete(cutoff)
        newest = sorted(self._records.values(), key=_key, reverse=True)
        if len(newest) > max_records:
            oldest_kept = newest[max_records - 1]["created_at"]
            turns = [k for k, v in self._turns.items() if v["created_at"] < oldest_kept]
            for k in turns:
                del self._turns[k]
            deleted += len(turns)
        return deleted + self._drop(item["id"] for item in newest[max_records:])

    async def ping(self) -> None:
        self._check()

    def _check(self) -> None:
        if not self._open:
            raise RepairLogUnavailable("the repair log is not open")

    def _drop(self, ids: Iterable[str]) -> int:
        doomed = list(ids)
        for record_id in doomed:
            del self._records[record_id]
        return len(doomed)


def _bump(counts: dict[str, int], keys: Iterable[str]) -> None:
    for key in keys:
        counts[key] = counts.get(key, 0) + 1


def _matcher(q: RecordQuery) -> Callable[[dict[str, Any]], bool]:
    filters = q.filters()
    since = None if q.since is None else iso(q.since)
    until = None if q.until is None else iso(q.until)
    after = None if q.after is None else (iso(q.after[0]), q.after[1])

    def match(item: dict[str, Any]) -> bool:
        return (
            all(item[name] == value for name, value in filters.items())
            and (q.rule is None or q.rule in item["rules"])
            and (q.conversation is None or item["conversation"] == q.conversation)
            and (since is None or item["created_at"] >= since)
            and (until is None or item["created_at"] < until)
            and (after is None or _key(item) < after)
        )

    return match
