"""The log handler the proxy installs: lines to a stream, written in batches.

A request line through :mod:`logging` costs a ``LogRecord`` and a ``write`` plus ``flush``
system call; at thousands of requests a second both show in the proxy's CPU per request.
:class:`LineHandler` takes preformatted lines (:meth:`LineHandler.write`, which
:class:`~proxy.logs.RequestLog` uses) as well as records, and writes what waits in one go.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TextIO

#: Lines wait at most this long in :class:`LineHandler`'s buffer (nginx's ``flush=`` idea).
FLUSH_SECONDS = 0.2
#: A buffer this large is written at once.
FLUSH_BYTES = 1 << 16


class LineHandler(logging.Handler):
    """Writes lines to a stream through a small buffer: one ``write`` per batch of lines.

    Request lines (:meth:`write`) wait up to :data:`FLUSH_SECONDS` when an event loop runs in
    the writing thread. Every record that comes through :mod:`logging` (uvicorn's start and
    shutdown lines, warnings, tracebacks), every line written outside the loop and every line
    to a terminal goes out at once, with whatever waited before it: order is kept, and the
    request lines of a server that stops are out before its last line ("Finished server
    process"). ``flush``/``close`` write what waits (``logging.shutdown`` runs both at exit);
    a process killed outright loses at most :data:`FLUSH_SECONDS` of request lines.
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self._parts: list[str] = []
        self._size = 0
        self._scheduled = False
        self._buffered = not isatty(stream)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.write(line, urgent=True)

    def write(self, line: str, *, urgent: bool = False) -> None:
        """Write ``line`` (a newline follows), now or with the next batch."""
        line += "\n"
        self.acquire()  # the handler's own lock (re-entrant): the writer thread may log meanwhile
        try:
            self._parts.append(line)
            self._size += len(line)
            if urgent or not self._buffered or self._size >= FLUSH_BYTES:
                self._drain()
            elif not self._scheduled:
                try:
                    asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)
                    self._scheduled = True
                except RuntimeError:  # no loop in this thread: nothing would come back for it
                    self._drain()
        finally:
            self.release()

    def _drain(self) -> None:
        text = "".join(self._parts)
        self._parts.clear()
        self._size = 0
        self._scheduled = False
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: the lines are lost, not us
            pass

    def flush(self) -> None:
        self.acquire()
        try:
            if self._parts:
                self._drain()
        finally:
            self.release()

    def close(self) -> None:
        self.flush()
        super().close()


def isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
