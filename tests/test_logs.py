"""The request log line: the fast JSON path writes what the general one would."""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import orjson
import pytest

from proxy.logs import LOGGER, JsonFormatter, RequestLog


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """The toolcall_guard logger writing JSON lines to a buffer (restored afterwards)."""
    saved = LOGGER.handlers[:], LOGGER.level, LOGGER.propagate
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    LOGGER.handlers[:], LOGGER.propagate = [handler], False
    LOGGER.setLevel(logging.INFO)
    yield stream
    LOGGER.handlers[:], LOGGER.level, LOGGER.propagate = saved


def _entry(path: str = "/v1/chat/completions") -> RequestLog:
    entry = RequestLog("POST", path, "rid-1", time.perf_counter())
    entry.route, entry.upstream, entry.model, entry.outcome = "chat", "openai", "gpt-4o", "clean"
    entry.status, entry.end, entry.sanitize_ms, entry.upstream_ms = 200, "complete", 0.12345, 2.0
    return entry


def test_one_line_per_request_with_the_fields_that_are_set(lines: io.StringIO) -> None:
    _entry().emit()
    [text] = lines.getvalue().splitlines()
    line = orjson.loads(text)
    assert list(line)[:4] == ["ts", "level", "logger", "msg"]
    assert line["level"] == "info"
    assert line["logger"] == "toolcall_guard"
    assert line["msg"] == "POST /v1/chat/completions 200"
    assert line["request_id"] == "rid-1"
    assert line["outcome"] == "clean"
    assert line["sanitize_ms"] == 0.123  # durations rounded to the microsecond
    assert "error" not in line  # unset fields are left out
    assert "record" not in line


def test_the_fast_path_matches_the_general_one(lines: io.StringIO) -> None:
    entry = _entry('/v1/"odd"\npath')  # the message needs escaping
    entry.request = {"messages": [{"role": "user", "content": "ünïcode \u2028"}]}
    entry.emit()
    [text] = lines.getvalue().rstrip("\n").split("\n")  # U+2028 stays raw in JSON
    line = orjson.loads(text)
    assert line["msg"] == 'POST /v1/"odd"\npath 200'
    assert line["request"] == entry.request
    record = logging.LogRecord("toolcall_guard", logging.INFO, "x", 0, line["msg"], (), None)
    record.event = {k: v for k, v in line.items() if k not in ("ts", "level", "logger", "msg")}  # type: ignore[attr-defined]
    formatter = JsonFormatter()
    fast = formatter.format(record)
    general = formatter._format_dict(record, record.event)  # type: ignore[attr-defined]
    assert fast == general  # same bytes, same key order
    assert orjson.loads(fast) | {"ts": line["ts"]} == line


@pytest.mark.parametrize("created", [1700000000.0, 1700000000.9996, 1763763245.123456])
def test_the_timestamp_is_the_iso_time_in_milliseconds(created: float) -> None:
    formatter = JsonFormatter()
    expected = datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")
    assert formatter._ts(created) == expected
    assert formatter._ts(created + 0.0005) == formatter._ts(created + 0.0005)  # cached second


def test_fields_that_shadow_the_head_take_the_general_path() -> None:
    record = logging.LogRecord("toolcall_guard", logging.INFO, "x", 0, "hello", (), None)
    record.event = {"msg": "from the event", "status": 200}  # type: ignore[attr-defined]
    line = orjson.loads(JsonFormatter().format(record))
    assert line["msg"] == "from the event"  # one key, not two
    assert line["status"] == 200


def test_records_without_fields_or_with_a_traceback(lines: io.StringIO) -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        LOGGER.exception("failed on %s", "/v1/x")
    LOGGER.warning("plain")
    first, second = (orjson.loads(t) for t in lines.getvalue().rstrip("\n").split("\n"))
    assert first["msg"] == "failed on /v1/x"
    assert "RuntimeError: boom" in first["exc"]
    assert second == {
        "ts": second["ts"],
        "level": "warning",
        "logger": "toolcall_guard",
        "msg": "plain",
    }
