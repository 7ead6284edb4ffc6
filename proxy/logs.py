"""Logging: one line per request on the ``toolcall_guard`` logger, JSON or human-readable.

The line names the request (id, method, path, route), where it went (upstream, model), what
the sanitizer did (outcome, rules), how it ended (status, end of stream) and how long each part
took. It never holds a header, a key or, unless ``server.log_contents``, any message content.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import sys
import time
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any, TextIO

import orjson

from proxy.loghandler import LineHandler, isatty
from proxy.relay.asgi import LEFT_INCOMPLETE
from proxy.settings import ServerSettings

LOGGER = logging.getLogger("toolcall_guard")

_SANE_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")
#: The longest path a request line (and a record) holds, in characters.
MAX_LOGGED_PATH = 1024

#: Endings that make a request's line a warning: the client got a cut answer.
_CUT = frozenset({"upstream_cut", "upstream_timeout"})
#: uvicorn's ERROR line for a response left incomplete (``protocols/http/*_impl.py``).
UVICORN_INCOMPLETE = "ASGI callable returned without completing response."

#: Fields of a request line, in the order the text format prints them.
FIELDS = (
    "request_id",
    "method",
    "path",
    "route",
    "upstream",
    "model",
    "outcome",
    "rules",
    "status",
    "end",
    "error",
    "record",
    "upstream_request_id",
    "total_ms",
    "sanitize_ms",
    "upstream_ms",
    "request",
)


_VALUES = attrgetter(*FIELDS)
#: Durations, rounded to the microsecond in the line.
_DURATIONS = ("total_ms", "sanitize_ms", "upstream_ms")


#: New request ids: 16 random hex digits per process, then a counter (no system call per
#: request; unique across processes and restarts by the random part).
_ID_PREFIX = os.urandom(8).hex()
_ID_COUNTER = itertools.count(1)


def request_id(sent: bytes | None) -> str:
    """The client's ``x-request-id`` if sane (≤ 128 of ``[A-Za-z0-9._:-]``), else a new one."""
    if sent is not None and _SANE_REQUEST_ID.fullmatch(sent):
        return sent.decode("ascii")
    return f"{_ID_PREFIX}{next(_ID_COUNTER) & 0xFFFFFFFF:08x}"


class RequestLog:
    """What one request did, filled in while it is handled and written out once at the end."""

    __slots__ = (*FIELDS, "t0")

    def __init__(self, method: str, path: str, request_id: str, t0: float) -> None:
        self.t0 = t0
        self.request_id = request_id
        self.method = method
        # A client chooses the path: a line never holds more of it than this.
        self.path = path if len(path) <= MAX_LOGGED_PATH else path[:MAX_LOGGED_PATH] + "…"
        self.route = "passthrough"
        self.upstream: str | None = None
        self.model: str | None = None
        self.outcome: str | None = None
        self.rules: str | None = None
        self.status: int | None = None
        self.end: str | None = None  # how a relayed body ended: complete, client_gone, …
        self.error: str | None = None  # the proxy's error code, when the proxy answered
        self.record: str | None = None
        self.upstream_request_id: str | None = None
        self.total_ms: float | None = None
        self.sanitize_ms: float | None = None
        self.upstream_ms: float | None = None
        self.request: Any = None  # the parsed body, only with server.log_contents

    def emit(self) -> None:
        """Write the line (when the logger takes INFO); sets ``total_ms`` either way.

        Under :func:`configure_logging`'s JSON handler the line is formatted and buffered
        directly (no ``LogRecord``: most of a log call's cost); under any other handler the
        record is made directly (``Logger.info`` would look up the caller's frame) and its
        ``event`` holds the fields that are set, in order.
        """
        self.total_ms = (time.perf_counter() - self.t0) * 1000
        level = logging.WARNING if self.end in _CUT else logging.INFO
        if not LOGGER.isEnabledFor(level):
            return
        message = f"{self.method} {self.path} {self.status}"
        handlers = LOGGER.handlers
        if len(handlers) == 1 and not LOGGER.filters:
            handler = handlers[0]
            formatter = handler.formatter
            if type(handler) is LineHandler and type(formatter) is JsonFormatter:
                # FIELDS never shadow the head: the fields follow it as they are.
                head = formatter.request_head(message, level)
                handler.write(formatter.request_line(self.fields(head)))
                return
        record = LOGGER.makeRecord(
            LOGGER.name,
            level,
            "(proxy.logs)",
            0,
            message,
            (),
            None,
            extra={"event": self.fields({})},
        )
        LOGGER.handle(record)

    def fields(self, into: dict[str, Any]) -> dict[str, Any]:
        """``into`` with the fields that are set added, in order, durations rounded."""
        for name, value in zip(FIELDS, _VALUES(self), strict=True):
            if value is not None:
                into[name] = value
        for name in _DURATIONS:  # the key keeps its place
            value = into.get(name)
            if value is not None:
                into[name] = round(value, 3)
        return into


#: A line's time after the second: its milliseconds and offset, made once (a format per line
#: costs more than the rest of the time stamp).
_MILLISECONDS = tuple(f"{ms:03d}+00:00" for ms in range(1000))


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the request's fields.

    The time is formatted once per second (its millisecond part per line), the constant head
    of a request line is rendered once per level and logger.
    """

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._prefix = ""
        self._heads: dict[tuple[str, str], bytes] = {}

    def _ts(self, created: float) -> str:
        second = int(created)
        if second != self._second:
            moment = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds")
            self._prefix, self._second = moment.removesuffix("+00:00") + ".", second
        return self._prefix + _MILLISECONDS[int((created - second) * 1000)]

    def _head(self, levelname: str, logger: str) -> bytes:
        head = self._heads.get((levelname, logger))
        if head is None:
            line = {"level": levelname.lower(), "logger": logger}
            head = self._heads[levelname, logger] = orjson.dumps(line)[1:-1]
        return head

    def format(self, record: logging.LogRecord) -> str:
        event = getattr(record, "event", None)
        if record.exc_info or not event or not _plain(event):
            return self._format_dict(record, event)
        head = self._head(record.levelname, record.name)
        return self.line(record.created, head, record.getMessage(), event)

    def line(self, created: float, head: bytes, message: str, event: dict[str, Any]) -> str:
        """A line with plain fields ``event``; ``head`` is :meth:`_head`'s level and logger."""
        start = b'{"ts":"%s",%s,"msg":%s,' % (
            self._ts(created).encode(),
            head,
            orjson.dumps(message),
        )
        return _separators_escaped((start + orjson.dumps(event, default=str)[1:]).decode())

    def request_head(self, message: str, level: int = logging.INFO) -> dict[str, Any]:
        """The head of a request's line on the proxy's logger, stamped now: fields follow."""
        return self._head_dict(time.time(), _LEVEL_NAMES[level], LOGGER.name, message)

    def _head_dict(self, created: float, level: str, logger: str, message: str) -> dict[str, Any]:
        return {"ts": self._ts(created), "level": level, "logger": logger, "msg": message}

    def request_line(self, line: dict[str, Any]) -> str:
        """A request's line: :meth:`request_head`'s dict with the request's fields after it
        (the same text :meth:`line` writes for them, in one serialisation)."""
        return _separators_escaped(orjson.dumps(line, default=str).decode())

    def _format_dict(self, record: logging.LogRecord, event: dict[str, Any] | None) -> str:
        """Any record: the general, slower way (a traceback, or fields that shadow the head)."""
        level, message = record.levelname.lower(), record.getMessage()
        line = self._head_dict(record.created, level, record.name, message)
        line.update(event or {})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return _separators_escaped(orjson.dumps(line, default=str).decode())


def _separators_escaped(line: str) -> str:
    """``line`` with U+0085, U+2028 and U+2029 escaped: valid JSON either way, but readers that
    split lines on them (JavaScript, Python's ``str.splitlines``, some log shippers) would read
    a client's value as the start of a forged line. They occur only inside JSON strings."""
    if line.isascii():
        return line
    return line.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


class IncompleteOnPurpose(logging.Filter):
    """Drops uvicorn's ERROR line for a response the proxy left incomplete on purpose (see
    :data:`proxy.relay.asgi.LEFT_INCOMPLETE`): that request's own line already says how its
    answer was cut, at warning, with its request id. uvicorn logs the line in the task that
    served the request, right after the app returned, so the mark is read there; the same line
    for any other response (a real bug) still goes out."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == UVICORN_INCOMPLETE and LEFT_INCOMPLETE.get())


_INCOMPLETE_ON_PURPOSE = IncompleteOnPurpose()


def quiet_incomplete_on_purpose() -> None:
    """Install :class:`IncompleteOnPurpose` on uvicorn's error logger (once, however often)."""
    logging.getLogger("uvicorn.error").addFilter(_INCOMPLETE_ON_PURPOSE)


_HEAD_KEYS = frozenset({"ts", "level", "logger", "msg", "exc"})
assert _HEAD_KEYS.isdisjoint(FIELDS), "a request line's field would shadow its head"
#: The ``level`` of a request's line.
_LEVEL_NAMES = {logging.INFO: "info", logging.WARNING: "warning"}


def _plain(event: dict[str, Any]) -> bool:
    """Whether the fields can follow the head as they are (no key would appear twice)."""
    return _HEAD_KEYS.isdisjoint(event)


#: C0 and C1 controls and DEL, shown escaped in text lines: a client-chosen path or value with
#: a line break must not start a forged line.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROLS.update({c: f"\\u{c:04x}" for c in (0x2028, 0x2029)})


class TextFormatter(logging.Formatter):
    """``12:00:01.234 INFO POST /v1/chat/completions 200 upstream=openai outcome=repaired …``.

    The message and fields never hold a raw control character (a traceback, when there is one,
    follows on its own lines).
    """

    def __init__(self) -> None:
        super().__init__("%(asctime)s.%(msecs)03d %(levelname)s %(message)s", "%H:%M:%S")

    def formatMessage(self, record: logging.LogRecord) -> str:
        event = getattr(record, "event", None) or {}
        pairs = [
            f"{k}={v}" for k, v in event.items() if k not in ("method", "path", "status", "request")
        ]
        if "request" in event:
            pairs.append("request=" + orjson.dumps(event["request"], default=str).decode())
        return " ".join([super().formatMessage(record), *pairs]).translate(_CONTROLS)


def configure_logging(server: ServerSettings, stream: TextIO | None = None) -> logging.Handler:
    """Send the proxy's and uvicorn's logs to ``stream`` (stderr) in the configured format.

    ``log_format = auto`` means text on a terminal, JSON otherwise (containers, files).
    """
    stream = stream or sys.stderr
    as_json = server.log_format == "json" or (server.log_format == "auto" and not isatty(stream))
    handler = LineHandler(stream)
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
    level = server.log_level.upper()
    for name in ("toolcall_guard", "uvicorn"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    return handler
