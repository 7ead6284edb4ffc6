"""The request log line: the fast JSON path writes what the general one would."""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import orjson
import pytest

from proxy.loghandler import FLUSH_SECONDS, LineHandler
from proxy.logs import (
    LOGGER,
    JsonFormatter,
    RequestLog,
    TextFormatter,
    configure_logging,
    request_id,
)
from proxy.settings import ServerSettings


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


class _Counting(io.StringIO):
    """A stream that counts its writes (the handler's point is to make fewer)."""

    def __init__(self, terminal: bool = False) -> None:
        super().__init__()
        self.writes = 0
        self.terminal = terminal

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)

    def isatty(self) -> bool:
        return self.terminal


@pytest.fixture
def handler() -> Iterator[tuple[LineHandler, _Counting]]:
    """:func:`configure_logging`'s handler and the stream it writes to (loggers restored)."""
    loggers = [LOGGER, logging.getLogger("uvicorn")]
    saved = [(lg.handlers[:], lg.level, lg.propagate) for lg in loggers]
    stream = _Counting()
    configured = configure_logging(ServerSettings(log_format="json"), stream)
    assert isinstance(configured, LineHandler)
    yield configured, stream
    configured.close()
    for lg, (handlers, level, propagate) in zip(loggers, saved, strict=True):
        lg.handlers[:], lg.level, lg.propagate = handlers, level, propagate


@contextmanager
def alone(configured: logging.Handler) -> Iterator[None]:
    """Only ``configured`` on the proxy's logger: pytest adds its capturing handlers there
    during a test, and another handler rightly takes the request lines' fast path away."""
    saved = LOGGER.handlers[:]
    LOGGER.handlers[:] = [configured]
    try:
        yield
    finally:
        LOGGER.handlers[:] = saved


def test_request_lines_are_written_in_one_batch_within_the_flush_delay(
    handler: tuple[LineHandler, _Counting],
) -> None:
    _, stream = handler

    async def burst() -> float:
        for _ in range(50):
            _entry().emit()
        assert stream.writes == 0  # buffered while the loop runs
        started = time.monotonic()
        while not stream.getvalue():
            assert time.monotonic() - started < 5, "the buffer was never written"
            await asyncio.sleep(0.01)
        return time.monotonic() - started

    configured, _ = handler
    with alone(configured):
        waited = asyncio.run(burst())
    assert waited <= FLUSH_SECONDS + 1
    assert stream.writes == 1
    lines = stream.getvalue().splitlines()
    assert len(lines) == 50
    assert all(orjson.loads(line)["request_id"] == "rid-1" for line in lines)


@pytest.mark.parametrize(
    ("end", "level"),
    [
        ("complete", "info"),
        ("client_gone", "info"),
        ("upstream_cut", "warning"),
        ("upstream_timeout", "warning"),
    ],
)
def test_a_cut_answer_makes_its_request_line_a_warning(
    handler: tuple[LineHandler, _Counting], end: str, level: str
) -> None:
    configured, stream = handler
    entry = _entry()
    entry.end = end
    with alone(configured):
        entry.emit()  # the fast path
    LOGGER.setLevel(logging.WARNING)  # an operator who only wants to hear of trouble
    with alone(configured):
        _entry().emit()
        entry.emit()
    configured.flush()
    lines = [orjson.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["level"] for line in lines] == [level] * (1 if level == "info" else 2)
    assert {line["end"] for line in lines} == {end}


@pytest.mark.parametrize("level", [logging.INFO, logging.WARNING])
def test_a_record_goes_out_at_once_after_the_lines_before_it(
    handler: tuple[LineHandler, _Counting], level: int
) -> None:
    _, stream = handler

    async def mixed() -> None:
        _entry().emit()
        LOGGER.log(level, "Finished server process [1]")  # any record, uvicorn's too
        assert stream.writes == 1  # the waiting request line and the record, together

    with alone(handler[0]):
        asyncio.run(mixed())
    first, second = (orjson.loads(t) for t in stream.getvalue().splitlines())
    assert first["request_id"] == "rid-1"
    assert second["msg"] == "Finished server process [1]"


def test_outside_an_event_loop_and_on_close_nothing_waits(
    handler: tuple[LineHandler, _Counting],
) -> None:
    configured, stream = handler

    async def one() -> None:
        _entry().emit()

    with alone(configured):
        _entry().emit()  # no running loop: no one would come back to write it
        assert stream.writes == 1
        asyncio.run(one())
    configured.close()  # logging.shutdown at exit does this
    assert len(stream.getvalue().splitlines()) == 2


def test_a_terminal_gets_every_line_at_once() -> None:
    stream = _Counting(terminal=True)
    configured = LineHandler(stream)
    configured.setFormatter(JsonFormatter())

    async def one() -> None:
        _entry().emit()
        assert stream.writes == 1

    with alone(configured):
        asyncio.run(one())


def test_new_request_ids_are_distinct_and_sane() -> None:
    ids = {request_id(None) for _ in range(1000)}
    assert len(ids) == 1000
    assert all(len(i) == 24 and int(i, 16) >= 0 for i in ids)
    assert request_id(b"client-id.1") == "client-id.1"
    assert request_id(b"bad id\n") not in ("bad id\n", "bad id")


@pytest.mark.parametrize("separator", ["\x85", "\u2028", "\u2029"])
def test_no_client_value_splits_a_json_line(lines: io.StringIO, separator: str) -> None:
    """Python's ``splitlines``, JavaScript and some shippers split on U+0085/U+2028/U+2029:
    a client's value holding one must not start a forged line (issue 24 item 7)."""
    forged = separator + '{"level":"error","msg":"forged"}'
    entry = _entry("/v1/files/a" + forged)
    entry.model = "gpt" + forged
    entry.emit()
    LOGGER.warning("general path", extra={"event": {"model": "m" + forged, "ts": "shadow"}})
    text = lines.getvalue()
    assert separator not in text
    first, second = text.splitlines()
    assert orjson.loads(first)["model"] == "gpt" + forged
    assert orjson.loads(second)["model"] == "m" + forged
    record = logging.LogRecord("toolcall_guard", logging.INFO, "x", 0, "p" + forged, (), None)
    assert len(TextFormatter().format(record).splitlines()) == 1


@pytest.mark.parametrize("end", ["complete", "upstream_cut"])
def test_the_line_handler_writes_the_line_the_general_path_writes(
    handler: tuple[LineHandler, _Counting], monkeypatch: pytest.MonkeyPatch, end: str
) -> None:
    """Request lines under configure_logging skip the LogRecord: same text (but the time)."""
    configured, stream = handler
    monkeypatch.setattr(time, "perf_counter", lambda: 100.0)  # the same total_ms twice
    entry = _entry('/v1/"odd"\npath\u2028')  # the message and a field need escaping
    entry.t0, entry.end, entry.rules = 99.0, end, "orphan_tool_result:2"
    entry.request = {"messages": [{"role": "user", "content": "ünïcode \u2029"}]}
    with alone(configured):
        entry.emit()  # the fast path
    configured.flush()
    general = io.StringIO()
    plain = logging.StreamHandler(general)
    plain.setFormatter(JsonFormatter())
    with alone(plain):
        entry.emit()  # a LogRecord through the formatter
    fast_line, general_line = stream.getvalue(), general.getvalue()
    assert fast_line.partition(",")[2] == general_line.partition(",")[2]  # after "ts"
    assert orjson.loads(fast_line)["total_ms"] == 1000.0
    assert orjson.loads(fast_line)["level"] == ("warning" if end == "upstream_cut" else "info")
