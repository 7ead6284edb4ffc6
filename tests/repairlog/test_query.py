"""``RecordQuery`` validates every parameter before a backend sees it."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest

from proxy.repairlog import InvalidQuery, RecordQuery
from proxy.repairlog.base import decode_cursor, encode_cursor


def raw_cursor(value: object) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(value)).decode().rstrip("=")


def test_a_cursor_round_trips() -> None:
    cursor = encode_cursor("2025-03-01T12:00:00.000001+00:00", "0190-abc")
    assert decode_cursor(cursor) == (datetime(2025, 3, 1, 12, 0, 0, 1, tzinfo=UTC), "0190-abc")
    assert RecordQuery(cursor=cursor).after == decode_cursor(cursor)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "!!!",
        "é",
        raw_cursor(["2025-03-01T12:00:00", "naive"]),
        raw_cursor(["0001-01-01T00:00:00+14:00", "overflows"]),
        raw_cursor(["2025-03-01T12:00:00+00:00", 5]),
        raw_cursor(["2025-03-01T12:00:00+00:00", "nul\x00"]),
        raw_cursor(["2025-03-01T12:00:00+00:00"]),
        raw_cursor({"a": 1}),
        raw_cursor([None, "x"]),
    ],
)
def test_foreign_cursors_are_rejected(cursor: str) -> None:
    with pytest.raises(InvalidQuery) as caught:
        RecordQuery(cursor=cursor)
    assert caught.value.param == "cursor"


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"outcome": "clean"}, "outcome"),
        ({"ending": "cut"}, "ending"),
        ({"upstream": "a\x00"}, "upstream"),
        ({"model": "\x00"}, "model"),
        ({"rule": "r\x00"}, "rule"),
        ({"since": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=3)))}, "since"),
        ({"until": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=3)))}, "until"),
    ],
)
def test_bad_values_name_their_parameter(kwargs: dict[str, object], param: str) -> None:
    with pytest.raises(InvalidQuery) as caught:
        RecordQuery(**kwargs)  # type: ignore[arg-type]
    assert caught.value.param == param


def test_times_become_utc() -> None:
    q = RecordQuery(
        since=datetime(2025, 1, 1, 12),
        until=datetime(2025, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))),
    )
    assert q.since == datetime(2025, 1, 1, 12, tzinfo=UTC)
    assert q.until == datetime(2025, 1, 1, 10, tzinfo=UTC)
    assert q.filters() == {}
    assert RecordQuery(upstream="u", outcome="warned").filters() == {
        "upstream": "u",
        "outcome": "warned",
    }
