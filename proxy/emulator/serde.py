"""serde_json's error wording and positions, as DeepSeek's Rust front end reports them.

DeepSeek deserializes the body with serde (through axum and serde_path_to_error), so its 400s
read ``Failed to deserialize the JSON body into the target type: <path>: <serde error> at line
L column C``. The position rules reproduced here follow serde_json's reader: the column is the
byte offset of the next unread byte from the start of its line, so

- an error found after reading a whole value (a message with a missing field or a wrong-typed
  field, a role string that is no known variant) points just past that value (past the
  message's closing ``}``: messages are an internally tagged enum, buffered then decoded);
- an "invalid type" error on an array or object that was only peeked points at its opening
  bracket.

Positions are computed on the raw request bytes when given, else on the compact JSON
serialization of the parsed body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import orjson

DESERIALIZE = "Failed to deserialize the JSON body into the target type: "
PARSE = "Failed to parse the request body as JSON: "

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb'["\[\]{}]')
_SCALAR_END = re.compile(rb"[\s,\]}]")
_WS = re.compile(rb"\s*")

Step = str | int


def unexpected(value: Any) -> str:
    """serde's ``Unexpected`` as serde_json displays it: ``sequence``, ``integer `5```…"""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value!r}`"
    if isinstance(value, str):
        return "string " + json.dumps(value, ensure_ascii=False)
    return "sequence" if isinstance(value, list) else "map"


class Locator:
    """Finds where serde would stop in the request bytes for a given JSON path."""

    def __init__(self, raw: bytes | None, body: Any) -> None:
        self._raw = raw
        self._body = body

    def at(self, *path: Step, peek: bool = False) -> str:
        """`` at line L column C`` for the value at `path` (past it, or at it when peeked)."""
        buf = self._buffer()
        try:
            start, end = _find(buf, path)
        except LookupError:  # the raw bytes do not have the shape the parsed body promised
            return " at line 1 column 0"
        offset = start if peek and buf[start : start + 1] in (b"[", b"{") else end
        line_start = buf.rfind(b"\n", 0, offset) + 1
        line = buf.count(b"\n", 0, line_start) + 1
        return f" at line {line} column {offset - line_start}"

    def _buffer(self) -> bytes:
        if self._raw is not None:
            return self._raw
        try:
            return orjson.dumps(self._body)
        except (orjson.JSONEncodeError, TypeError):
            return b""


def _find(buf: bytes, path: tuple[Step, ...]) -> tuple[int, int]:
    start = _skip_ws(buf, 0)
    end = _value_end(buf, start)
    for step in path:
        children = _members(buf, start) if isinstance(step, str) else _elements(buf, start)
        for key, child_start, child_end in children:
            if key == step:
                start, end = child_start, child_end
                break
        else:
            raise LookupError(step)
    return start, end


def _skip_ws(buf: bytes, i: int) -> int:
    match = _WS.match(buf, i)
    return match.end() if match else i


def _string_end(buf: bytes, i: int) -> int:
    match = _STRING.match(buf, i)
    if match is None:
        raise LookupError(i)
    return match.end()


def _value_end(buf: bytes, i: int) -> int:
    first = buf[i : i + 1]
    if first == b'"':
        return _string_end(buf, i)
    if first not in (b"[", b"{"):
        match = _SCALAR_END.search(buf, i)
        return match.start() if match else len(buf)
    depth = 0
    while True:
        match = _BRACKET.search(buf, i)
        if match is None:
            raise LookupError(i)
        if match.group() == b'"':
            i = _string_end(buf, match.start())
            continue
        depth += 1 if match.group() in (b"[", b"{") else -1
        i = match.end()
        if depth == 0:
            return i


def _members(buf: bytes, i: int) -> Iterator[tuple[Step, int, int]]:
    if buf[i : i + 1] != b"{":
        raise LookupError(i)
    i = _skip_ws(buf, i + 1)
    while buf[i : i + 1] == b'"':
        key_end = _string_end(buf, i)
        key = buf[i + 1 : key_end - 1].decode("utf-8", "replace")
        start = _skip_ws(buf, _skip_ws(buf, key_end) + 1)
        end = _value_end(buf, start)
        yield key, start, end
        i = _skip_ws(buf, end)
        if buf[i : i + 1] != b",":
            return
        i = _skip_ws(buf, i + 1)


def _elements(buf: bytes, i: int) -> Iterator[tuple[Step, int, int]]:
    if buf[i : i + 1] != b"[":
        raise LookupError(i)
    i = _skip_ws(buf, i + 1)
    index = 0
    while i < len(buf) and buf[i : i + 1] != b"]":
        end = _value_end(buf, i)
        yield index, i, end
        index += 1
        i = _skip_ws(buf, end)
        if buf[i : i + 1] != b",":
            return
        i = _skip_ws(buf, i + 1)
