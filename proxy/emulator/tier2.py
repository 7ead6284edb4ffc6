"""Shared pieces of the second-tier emulators (Kimi, Mistral, Groq, xAI, Qwen, vLLM, Ollama).

- `Dialect`: what `validators` and `app` need from one emulator (its validator, its error
  shape, its canned texts for forced statuses, unknown paths and unparsable bodies).
- `compact`: a JSON body as these providers send it (no spaces, UTF-8 kept).
- `first_fault`: the OpenAI-style pairing walk (a tool message must answer a call of the
  assistant ``tool_calls`` message it follows; a non-tool message may not come while calls of
  that message are unanswered), reported neutrally so each provider words it.
- `python_json` / `serde_json_error`: how a Python (vLLM) or a Rust (xAI) server words the
  parse error of a historical ``arguments`` string.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from proxy.emulator.common import Rejection, nonempty_list

Validate = Callable[[Any, bytes | None], Rejection | None]
Reject = Callable[[str, str, int], Rejection]


@dataclass(frozen=True, slots=True)
class Dialect:
    """One second-tier emulator as the app sees it.

    `prefix` starts its rule ids (``K`` for Kimi: ``K-404``, ``K-429``…); `forced` maps a status
    to the message the provider sends with it (``x-emulator-status``).
    """

    prefix: str
    validate: Validate
    reject: Reject
    not_found: str
    not_json: str
    forced: dict[int, str] = field(default_factory=dict)

    def forced_rejection(self, status: int) -> Rejection:
        """The provider's error for a forced `status`."""
        message = self.forced.get(status, "Emulated error.")  # ours when no text is known
        return self.reject(f"{self.prefix}-{status}", message, status)

    def path_rejection(self, method: str, path: str) -> Rejection:
        """The provider's 404 for an unknown path."""
        text = self.not_found.format(method=method, path=path)
        return self.reject(f"{self.prefix}-404", text, 404)


def compact(payload: Any) -> bytes:
    """``payload`` as compact JSON bytes, non-ASCII kept (as Go, Rust and FastAPI print it)."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class Fault:
    """The first pairing problem of a history.

    `kind`: ``orphan`` (a tool message with no open call block), ``unknown`` (its id is not a
    pending call of the open block: never called, or already answered) or ``unanswered`` (a
    non-tool message, or the end when `trailing_ok` is false, while calls are pending).
    `index` is the tool message (orphan, unknown) or the message that closed the block;
    `block` the open assistant message (-1 for none); `missing` the ids still unanswered.
    """

    kind: str
    index: int
    block: int
    call_id: str = ""
    missing: tuple[str, ...] = ()


def call_ids(msg: dict[str, Any]) -> list[str]:
    """The ids of an assistant message's tool calls (non-string ids as ``str()``)."""
    calls = msg.get("tool_calls") if msg.get("role") == "assistant" else None
    if not nonempty_list(calls):
        return []
    return [_text(call.get("id")) if isinstance(call, dict) else "" for call in calls]


def first_fault(messages: list[dict[str, Any]], *, trailing_ok: bool) -> Fault | None:
    """The first pairing fault of `messages` (dicts with a string ``role``), or None."""
    block, pending = -1, list[str]()
    for i, msg in enumerate(messages):
        if msg.get("role") == "tool":
            call_id = _text(msg.get("tool_call_id"))
            if block < 0:
                return Fault("orphan", i, block, call_id)
            if call_id not in pending:
                return Fault("unknown", i, block, call_id)
            pending.remove(call_id)
            continue
        if pending:
            return Fault("unanswered", i, block, missing=tuple(dict.fromkeys(pending)))
        pending = call_ids(msg)
        block = i if pending else -1
    if pending and not trailing_ok:
        return Fault("unanswered", len(messages), block, missing=tuple(dict.fromkeys(pending)))
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def python_json(text: str) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, error)`` with the error as Python prints an uncaught
    ``json.loads`` failure: ``json.decoder.JSONDecodeError: <msg>: line L column C (char P)``."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as error:
        return None, f"json.decoder.JSONDecodeError: {error}"
    except RecursionError as error:  # nesting deeper than Python's decoder follows
        return None, f"RecursionError: {error}"


# Python's json message -> serde_json's, at the end of the input and elsewhere.
_SERDE = {
    "Expecting value": ("EOF while parsing a value", "expected value"),
    "Unterminated string starting at": ("EOF while parsing a string", ""),
    "Expecting ':' delimiter": ("EOF while parsing an object", "expected `:`"),
    "Expecting property name enclosed in double quotes": (
        "EOF while parsing an object",
        "key must be a string",
    ),
    "Extra data": ("trailing characters", "trailing characters"),
    "Invalid control character at": (
        "",
        "control character (\\u0000-\\u001F) found while parsing a string",
    ),
    "Invalid \\escape": ("", "invalid escape"),
}


def serde_json_error(text: str) -> str | None:
    """serde_json's ``Error("…", line: L, column: C)`` (its Debug form) for `text`, or None.

    Verified for the empty string only (``EOF while parsing a value``, line 1, column 0,
    spiceai/spiceai#4734); the other messages are serde_json's own wordings mapped from
    Python's parser, their positions approximated (end of input for EOF errors).
    """
    try:
        json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return 'Error("recursion limit exceeded", line: 1, column: 129)'  # serde's depth cap
    except json.JSONDecodeError as error:
        at_end = not text[error.pos :].strip() or error.msg.startswith("Unterminated string")
        message = _serde_message(error.msg, text, at_end)
        if at_end and message.startswith("EOF"):
            line = text.count("\n") + 1
            column = len(text) - (text.rfind("\n") + 1)
        else:
            line, column = error.lineno, error.colno
        return f'Error("{message}", line: {line}, column: {column})'
    return None


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError("Expecting value", name, 0)  # serde takes no NaN/Infinity


def _serde_message(msg: str, text: str, at_end: bool) -> str:
    if msg == "Expecting ',' delimiter":
        inside = _innermost(text)
        if at_end:
            return "EOF while parsing a list" if inside == "[" else "EOF while parsing an object"
        return "expected `,` or `]`" if inside == "[" else "expected `,` or `}`"
    eof, elsewhere = _SERDE.get(msg, ("EOF while parsing a value", "expected value"))
    return (eof or elsewhere) if at_end else (elsewhere or eof)


def _innermost(text: str) -> str:
    """The innermost bracket still open at the end of `text` (strings skipped)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}" and stack:
            stack.pop()
    return stack[-1] if stack else "{"
