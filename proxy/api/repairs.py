"""``/repairs``: inspect the repair log (its owners; see :mod:`proxy.api.auth`).

- ``GET /repairs``: summaries, newest first, filtered, cursor-paginated.
- ``GET /repairs/stats``: counts by outcome, rule, upstream, upstream error kind and ending,
  and the repeats counted apart.
- ``GET /repairs/{record_id}``: the full record and a diff of received vs forwarded messages.
- ``DELETE /repairs?before=``: delete older records; returns how many.

With client keys configured, a client key reads only the records it sent (the list, the stats
and one record: another's answers 404, as if it did not exist) and may not delete; the admin
token reads and deletes all (:func:`~proxy.api.auth.repairs_reader`).

Reads ``request.app.state.repair_log`` (a :class:`~proxy.repairlog.RepairLog`) and
``request.app.state.settings``. Mount :data:`router` at the app root.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request

from proxy.api.auth import AdminRoute, repairs_reader
from proxy.api.repair_models import (
    ERRORS,
    Deleted,
    ErrorResponse,
    OutcomeName,
    RecordDetail,
    RecordPage,
    Stats,
)
from proxy.core.registry import ALL_RULES
from proxy.core.wire import Wire, wire_of_record
from proxy.endings import Ending
from proxy.errors import AdminTokenRequired, InvalidParameter, RecordNotFound, RepairLogDown
from proxy.repairlog import (
    InvalidQuery,
    RecordQuery,
    RecordWriter,
    RepairLog,
    RepairLogError,
    record_diff,
)
from proxy.repairlog.base import DEFAULT_LIMIT, MAX_LIMIT, utc

router = APIRouter(tags=["repairs"], route_class=AdminRoute, responses=ERRORS)

#: Who reads: None for every record, else the owner name of the client key sent.
Reader = Annotated[str | None, Depends(repairs_reader)]

Text = Annotated[str | None, Query(max_length=1000)]
Since = Annotated[datetime | None, Query(description="ISO-8601; inclusive")]


@router.get("/repairs", response_model=RecordPage, summary="List records, newest first")
async def list_repairs(
    request: Request,
    reader: Reader,
    *,
    upstream: Text = None,
    model: Text = None,
    outcome: OutcomeName | None = None,
    ending: Ending | None = None,
    rule: Text = None,
    since: Since = None,
    until: Annotated[datetime | None, Query(description="ISO-8601; exclusive")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=2000)] = None,
    conversation: Annotated[
        str | None,
        Query(
            max_length=1000,
            description="a conversation's every turn (its first records and their repeats)",
        ),
    ] = None,
) -> dict[str, Any]:
    """Record summaries (no bodies) matching every filter given; ``next_cursor`` names the next
    page (null on the last). A turn that repeats an earlier turn's findings in its conversation
    is listed only with ``conversation``: elsewhere it counts on its first record
    (``repeats``, ``last_seen``)."""
    if rule is not None and rule not in ALL_RULES:
        raise InvalidParameter(
            f"rule: no rule is named {rule!r}; allowed: {', '.join(ALL_RULES)}.", param="rule"
        )
    try:
        q = RecordQuery(
            upstream=upstream,
            model=model,
            outcome=outcome,
            rule=rule,
            conversation=conversation,
            since=since,
            until=until,
            limit=limit,
            cursor=cursor,
            ending=ending,
            owner=reader,
        )
    except InvalidQuery as exc:
        raise InvalidParameter(str(exc), param=exc.param) from None
    with _available():
        data, next_cursor = await _log(request).query(q)
    return {"data": data, "next_cursor": next_cursor}


@router.get("/repairs/stats", response_model=Stats, summary="Counts by outcome, rule, upstream")
async def repair_stats(request: Request, reader: Reader, since: Since = None) -> dict[str, Any]:
    """Counts of records (from ``since`` on, when given; a client key's own)."""
    moment = None if since is None else _moment(since, "since")
    with _available():
        return await _log(request).stats(moment, reader)


@router.get(
    "/repairs/{record_id}",
    response_model=RecordDetail,
    summary="One record with its diff",
    responses={404: {"model": ErrorResponse, "description": "no such record"}},
)
async def get_repair(
    request: Request, reader: Reader, record_id: Annotated[str, Path(max_length=200)]
) -> dict[str, Any]:
    """The full record as stored, plus a diff of the received and forwarded messages. A record
    not yet written (its answer still streaming, or waiting in the writer's queue) is served from
    the writer: the id in ``x-toolcall-guard-record`` answers at once."""
    record = None
    if "\x00" not in record_id:
        with _available():
            record = _unwritten(request, record_id) or await _log(request).get(record_id)
    if record is None or (reader is not None and record.get("owner") != reader):
        raise RecordNotFound(f"No record with id {record_id!r}.", param="record_id")
    record["diff"] = await asyncio.to_thread(
        record_diff, record["received"], record["forwarded"], record["findings"], record["path"]
    )
    wire = wire_of_record(record["path"], record["received"])
    record["api"], record["noun"] = wire.name, wire.noun
    record["history_key"] = ".".join(wire.location(record["received"]))
    record["views"] = _views(wire, record)
    return record


def _views(wire: Wire, record: dict[str, Any]) -> dict[str, Any]:
    """What the viewer shows of each item of each body the record holds (the row says)."""
    attempts = record.get("attempts") or []
    return {
        "received": wire.views(record["received"]),
        "forwarded": wire.views(record["forwarded"]),
        "attempts": [wire.views(a.get("forwarded")) for a in attempts if type(a) is dict],
    }


@router.delete("/repairs", response_model=Deleted, summary="Delete records older than a moment")
async def delete_repairs(
    request: Request,
    reader: Reader,
    before: Annotated[datetime, Query(description="ISO-8601; records created before it go")],
) -> dict[str, int]:
    """Delete every record created before ``before``; returns how many were deleted."""
    if reader is not None:
        raise AdminTokenRequired("Deleting records takes the admin token, not a client key.")
    moment = _moment(before, "before")
    with _available():
        return {"deleted": await _log(request).delete(moment)}


def _moment(value: datetime, param: str) -> datetime:
    try:
        return utc(value, param)
    except InvalidQuery as exc:
        raise InvalidParameter(str(exc), param=param) from None


def _unwritten(request: Request, record_id: str) -> dict[str, Any] | None:
    writer: RecordWriter | None = getattr(request.app.state, "writer", None)
    return None if writer is None else writer.find(record_id)


def _log(request: Request) -> RepairLog:
    log: RepairLog | None = getattr(request.app.state, "repair_log", None)
    if log is None:
        raise RepairLogDown("The repair log is not open.")
    return log


@contextmanager
def _available() -> Iterator[None]:
    try:
        yield
    except RepairLogError as exc:
        raise RepairLogDown(f"The repair log is unavailable: {exc}") from None
