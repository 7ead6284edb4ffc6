"""What an upstream's answer says about itself, read as it passes: id, model, finish reasons,
token usage (and, for a JSON answer, the answer itself, for content capture).

Fed every chunk the relay forwards, only while tracing is on; nothing is held back or delayed.
A streamed answer (SSE) is read event by event: only the events that can carry what is wanted
are parsed (the first one, and those naming a usage or a finish), the rest are skipped with a
byte search. A JSON answer is kept up to :data:`JSON_LIMIT` bytes and parsed once it ended; a
larger one is not read (its attributes are then missing, never wrong). Pure: no I/O.

Where each API puts what (one reader for all rows):

- chat completions: ``id``, ``model``, ``choices[].finish_reason``, ``usage.prompt_tokens`` /
  ``completion_tokens`` (a stream's last chunk with ``stream_options.include_usage``);
- Responses: ``id``, ``model``, ``status``, ``usage.input_tokens`` / ``output_tokens`` (a
  stream's ``response.completed`` event carries the whole ``response``);
- Messages: ``id``, ``model``, ``stop_reason``, ``usage`` (a stream's ``message_start`` holds
  ``message``; ``message_delta`` holds ``delta.stop_reason`` and the output tokens);
- Gemini: ``responseId``, ``modelVersion``, ``candidates[].finishReason``, ``usageMetadata``
  (Code Assist wraps it all in ``response``).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

#: The largest JSON answer read for its attributes (bytes).
JSON_LIMIT = 1 << 20
#: Each API's name for the input and the output token count (chat, Responses and Messages, Gemini).
_INPUT = ("input_tokens", "prompt_tokens", "promptTokenCount")
_OUTPUT = ("output_tokens", "completion_tokens", "candidatesTokenCount")
#: The longest SSE line kept while waiting for its end (a longer one is skipped).
LINE_LIMIT = 1 << 20
#: Bytes that make an SSE event worth parsing (one search of a chunk, in C).
_WANTED = re.compile(rb'usage|finish_reason": ?"|stop_reason": ?"|finishReason|completed')


class AnswerReader:
    """Reads an answer chunk by chunk; :meth:`close` it, then read its fields."""

    __slots__ = (
        "answer",
        "finish_reasons",
        "input_tokens",
        "json",
        "output_tokens",
        "parsed",
        "response_id",
        "response_model",
        "size",
        "sse",
        "tail",
    )

    def __init__(self, sse: bool) -> None:
        self.sse = sse
        self.json: list[bytes] = []  # a JSON answer's chunks (kept, not copied)
        self.tail = b""
        self.size = 0
        self.parsed = 0  # SSE events parsed
        self.response_id: str | None = None
        self.response_model: str | None = None
        self.finish_reasons: list[str] = []
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.answer: Any = None  # a JSON answer, parsed (content capture)

    def feed(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if not self.sse:
            if self.size <= JSON_LIMIT:
                self.json.append(chunk)
            elif self.json:  # too large to be read: nothing kept
                self.json = []
            return
        data = self.tail + chunk if self.tail else chunk
        if self.parsed and _WANTED.search(data) is None:  # no event here worth parsing
            self.tail = data[data.rfind(b"\n") + 1 :]  # the line still unfinished, if any
            if len(self.tail) > LINE_LIMIT:
                self.tail = b""
            return
        lines = data.split(b"\n")
        self.tail = lines.pop()
        if len(self.tail) > LINE_LIMIT:
            self.tail = b""
        for line in lines:
            self._line(line)

    def close(self) -> None:
        """The answer ended: read what is left."""
        if self.sse:
            if self.tail:
                self._line(self.tail)
            self.tail = b""
            return
        parts, self.json = self.json, []
        if not parts or self.size > JSON_LIMIT:
            return
        try:
            answer = orjson.loads(parts[0] if len(parts) == 1 else b"".join(parts))
        except orjson.JSONDecodeError:
            return
        self.absorb(answer, whole=True)

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        if self.parsed and _WANTED.search(line) is None:
            return
        try:
            event = orjson.loads(line[5:])
        except orjson.JSONDecodeError:
            return
        self.parsed += 1
        self.absorb(event)

    def absorb(self, obj: Any, whole: bool = False) -> None:
        """Take what ``obj`` (an answer, or one event of a stream) says."""
        if type(obj) is not dict:
            return
        if whole and self.answer is None:  # the outer object (Code Assist wraps its answer)
            self.answer = obj
        get = obj.get
        inner = get("response")  # Responses events, Code Assist
        if type(inner) is dict:
            self.absorb(inner)
        inner = get("message")  # message_start
        if type(inner) is dict:
            self.absorb(inner)
        found_id = get("id") or get("responseId")
        if type(found_id) is str and self.response_id is None:
            self.response_id = found_id
        model = get("model") or get("modelVersion")
        if type(model) is str:
            self.response_model = model
        usage = get("usage") or get("usageMetadata")
        if type(usage) is dict:
            self._usage(usage)
        named = _finished(obj)
        if named:
            self.finish_reasons = named

    def _usage(self, usage: dict[str, Any]) -> None:
        found = _count(usage, _INPUT)
        if found is not None:
            self.input_tokens = found
        found = _count(usage, _OUTPUT)
        if found is not None:
            self.output_tokens = found


def _finished(obj: dict[str, Any]) -> list[str]:
    """The finish reasons ``obj`` names, in order (none: an empty list): its choices' or
    candidates', its ``stop_reason``, its ``delta``'s, a Responses object's ``status``
    (``in_progress`` names none)."""
    named: list[str] = []
    choices = obj.get("choices") or obj.get("candidates")
    if type(choices) is list:
        for choice in choices:
            if type(choice) is dict:
                reason = choice.get("finish_reason") or choice.get("finishReason")
                if type(reason) is str and reason and reason != "in_progress":
                    named.append(reason)
    reason = obj.get("stop_reason")
    if type(reason) is str and reason and reason != "in_progress":
        named.append(reason)
    delta = obj.get("delta")
    if type(delta) is dict:
        reason = delta.get("stop_reason")
        if type(reason) is str and reason and reason != "in_progress":
            named.append(reason)
    if obj.get("object") == "response":  # Responses: its status says how it ended
        reason = obj.get("status")
        if type(reason) is str and reason and reason != "in_progress":
            named.append(reason)
    return named


def _count(usage: dict[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first of each API's names for a token count in ``usage`` that holds an int."""
    for key in keys:
        value = usage.get(key)
        if type(value) is int:
            return value
    return None
