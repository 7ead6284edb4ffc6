"""Logging: one line per request on the ``toolcall_guard`` logger, JSON or human-readable.

The line names the request (id, method, path, route), where it went (upstream, model), what
the sanitizer did (outcome, rules), how it ended (status, end of stream) and how long each part
took. It never holds a header, a key or, unless ``server.log_contents``, any message content.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any, TextIO

import orjson

from proxy.settings import ServerSettings

LOGGER = logging.getLogger("toolcall_guard")

_SANE_REQUEST_ID = re.compile(rb"[A-Za-z0-9._:-]{1,128}")

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


def request_id(sent: bytes | None) -> str:
    """The client's ``x-request-id`` if sane (≤ 128 of ``[A-Za-z0-9._:-]``), else a new one."""
    if sent is not None and _SANE_REQUEST_ID.fullmatch(sent):
        return sent.decode("ascii")
    return os.urandom(12).hex()


class RequestLog:
    """What one request did, filled in while it is handled and written out once at the end."""

    __slots__ = (*FIELDS, "started", "t0")

    def __init__(self, method: str, path: str, request_id: str, t0: float) -> None:
        self.t0 = t0
        self.started = False  # response headers sent to the client
        self.request_id = request_id
        self.method = method
        self.path = path
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
        """Write the line (when the logger takes INFO); sets ``total_ms`` either way."""
        self.total_ms = (time.perf_counter() - self.t0) * 1000
        if LOGGER.isEnabledFor(logging.INFO):
            event = {name: getattr(self, name) for name in FIELDS}
            event = {
                k: round(v, 3) if type(v) is float else v for k, v in event.items() if v is not None
            }
            LOGGER.info("%s %s %s", self.method, self.path, self.status, extra={"event": event})


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the request's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(getattr(record, "event", None) or {})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


#: C0 and C1 controls and DEL, shown escaped in text lines: a client-chosen path or value with
#: a line break must not start a forged line.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


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
    as_json = server.log_format == "json" or (server.log_format == "auto" and not stream.isatty())
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter() if as_json else TextFormatter())
    level = server.log_level.upper()
    for name in ("toolcall_guard", "uvicorn"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    return handler
