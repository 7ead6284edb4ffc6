"""Strict emulation of Gemini's OpenAI-compatible `/v1beta/openai/chat/completions` validation.

Rows implemented (provider-rules.md §3): G1 (+ G2 current turn, G3 dummy signatures), G6, G7,
G8, G9, G11, G12, G14, and seed 002 (a tool message's ``content`` must be a string). G13:
``name`` on tool messages is accepted, not required (Google's examples send it; only its
absence as the cause of a 400 was reported, and seed 002's fix removed it). Errors are Gemini's
one-element array ``[{"error": {"code": 400, "message": ..., "status": "INVALID_ARGUMENT"}}]``.

Order, as Gemini sees a request: the JSON payload is mapped onto Google's request message first
(a non-object root, then unknown top-level fields, G14, in key order); then the compat layer
translates every message in order (G9 ``content: null``, seed 002 tool content that is no
string, and the structural checks below); then the native validator walks the resulting contents in
order, checking for each message: G11 (empty text), G12 (no parts), then the turn rules G8 (a
tool message not answering a function-call turn), G7 (response count differs from the call
count, also for a call turn left unanswered at the very end), G6 (a call turn not right after a
user or tool turn), and G1.

Model switch: G1 applies to ``gemini-3*`` models (``models/`` prefix allowed) only: in the
current turn (the messages after the last ``user`` message) the first call of every assistant
``tool_calls`` message must carry ``extra_content.google.thought_signature``; any non-empty
string passes, so Google's dummies ``skip_thought_signature_validator`` and
``context_engineering_is_the_way_to_go`` do. The ``position`` in the G1 text is the index in
Gemini's ``contents`` (system messages hoisted out, consecutive tool messages merged), the same
index G12 names.

Structural errors no row names (a message that is not an object, an unknown role, a missing
``content`` on a non-assistant message, malformed parts or tool calls, ``arguments`` that is
not a JSON object string, ``messages`` missing or empty) answer Gemini's generic
``Request contains an invalid argument.`` under rule ``G-schema``. ``content: ""`` on an
assistant message with ``tool_calls`` is accepted (G10: reports conflict). Unknown keys inside
messages are accepted (not observed either way).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from proxy.emulator.common import Rejection, gemini_rejection, nonempty_list

GENERIC = "Request contains an invalid argument."
ROLES = ("system", "developer", "user", "assistant", "tool")
PART_TYPES = ("text", "image_url", "input_audio", "file")
KNOWN_FIELDS = frozenset(
    (
        *("model", "messages", "stream", "stream_options", "temperature", "top_p", "n"),
        *("max_tokens", "max_completion_tokens", "stop", "tools", "tool_choice"),
        *("parallel_tool_calls", "response_format", "reasoning_effort", "seed"),
        *("presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "logit_bias"),
        *("user", "modalities", "audio", "prediction", "web_search_options", "metadata"),
        *("store", "service_tier", "extra_body"),
    )
)
_GEMINI_3 = re.compile(r"(?:models/)?gemini-3")
_G1 = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
_G6 = (
    "Please ensure that function call turn comes immediately after a user turn or after a "
    "function response turn."
)
_G7 = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
_G8 = "Please ensure that function response turn comes immediately after a function call turn."
_G11 = (
    "Unable to submit request because it has an empty text parameter. Add a value to the "
    "parameter and try again. Learn more: "
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
)


def not_json() -> Rejection:
    """Gemini's answer to a body that does not parse as JSON."""
    return gemini_rejection("G-json", "Invalid JSON payload received. Unexpected token.")


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error Gemini reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        text = 'Invalid JSON payload received. Unknown name "": Root element must be a message.'
        return gemini_rejection("G-json", text)
    for key in body:
        if key not in KNOWN_FIELDS:
            return _unknown_field(key)
    messages = body.get("messages")
    if not nonempty_list(messages):
        return gemini_rejection("G-schema", GENERIC)
    for msg in messages:
        found = _translate(msg)
        if found is not None:
            return found
    return _Walk(messages, is_gemini_3(body.get("model"))).run()


def is_gemini_3(model: Any) -> bool:
    """True for the models that validate thought signatures (G1)."""
    return isinstance(model, str) and _GEMINI_3.match(model) is not None


def _unknown_field(key: str) -> Rejection:
    text = f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
    violation = {"description": text}
    details = [
        {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}
    ]
    return gemini_rejection("G14", text, details=details)


def _translate(msg: Any) -> Rejection | None:
    """The compat layer's checks of one message (before the native validator)."""
    if not isinstance(msg, dict) or msg.get("role") not in ROLES:
        return gemini_rejection("G-schema", GENERIC)
    role = msg["role"]
    if "content" in msg:
        found = _content(msg["content"])
    elif role != "assistant":
        found = gemini_rejection("G-schema", GENERIC)
    else:
        found = None
    if found is None and role == "tool" and isinstance(msg.get("content"), list):
        found = gemini_rejection("G-schema", GENERIC)  # seed 002; the wording is the generic one
    if found is None and role == "assistant" and not _valid_calls(msg.get("tool_calls")):
        found = gemini_rejection("G-schema", GENERIC)
    return found


def _content(content: Any) -> Rejection | None:
    if content is None:
        return gemini_rejection("G9", "Expected string or list of content parts, got: null")
    if not isinstance(content, str | list):
        shown = _show(content)
        text = f"Expected string or list of content parts, got: {shown}"
        return gemini_rejection("G-schema", text)
    if isinstance(content, list) and not all(_valid_part(part) for part in content):
        return gemini_rejection("G-schema", GENERIC)
    return None


def _valid_part(part: Any) -> bool:
    if not isinstance(part, dict) or part.get("type") not in PART_TYPES:
        return False
    return part["type"] != "text" or isinstance(part.get("text"), str)


def _valid_calls(calls: Any) -> bool:
    if calls is None:
        return True
    return isinstance(calls, list) and all(_valid_call(call) for call in calls)


def _valid_call(call: Any) -> bool:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return False
    name, arguments = call["function"].get("name"), call["function"].get("arguments")
    if not (isinstance(name, str) and name and isinstance(arguments, str)):
        return False
    extra = call.get("extra_content", {})
    if not isinstance(extra, dict) or not isinstance(extra.get("google", {}), dict):
        return False
    try:
        return isinstance(orjson.loads(arguments), dict)
    except orjson.JSONDecodeError:  # also raised beyond orjson's nesting limit
        return False


def _show(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()[:200]
    except orjson.JSONEncodeError:  # deeper than orjson serializes
        return type(value).__name__


class _Walk:
    """The native validator's pass over the translated contents, in order."""

    def __init__(self, messages: list[dict[str, Any]], gemini_3: bool) -> None:
        self.messages = messages
        self.gemini_3 = gemini_3
        users = [i for i, msg in enumerate(messages) if msg["role"] == "user"]
        self.turn_start = users[-1] if users else -1
        self.position = -1  # index in Gemini's contents
        self.previous: str | None = None  # role of the previous non-system message
        self.calls = 0  # calls of the open function-call turn
        self.responses: int | None = None  # responses so far; None when no call turn is open

    def run(self) -> Rejection | None:
        for i, msg in enumerate(self.messages):
            found = _empty_text(msg) or self._step(i, msg)
            if found is not None:
                return found
        if self.responses is not None and self.responses != self.calls:
            return gemini_rejection("G7", _G7)
        return None

    def _step(self, i: int, msg: dict[str, Any]) -> Rejection | None:
        role = msg["role"]
        if role in ("system", "developer"):
            return None  # hoisted into system_instruction
        before, self.previous = self.previous, role
        if not (role == "tool" and before == "tool"):
            self.position += 1
        found = self._no_parts(msg)
        if found is not None:
            return found
        if role == "tool":
            return self._response()
        if self.responses is not None and self.responses != self.calls:
            return gemini_rejection("G7", _G7)
        self.responses = None
        calls = msg.get("tool_calls") if role == "assistant" else None
        return self._call_turn(i, calls, before) if nonempty_list(calls) else None

    def _no_parts(self, msg: dict[str, Any]) -> Rejection | None:
        content = msg.get("content")
        if isinstance(content, str) or content:
            return None  # "" was judged by G11 (or accepted on a call turn, see G10)
        if content is None and nonempty_list(msg.get("tool_calls")):
            return None
        text = (
            f"* GenerateContentRequest.contents[{self.position}].parts: "
            "contents.parts must not be empty."
        )
        return gemini_rejection("G12", text)

    def _response(self) -> Rejection | None:
        if self.responses is None:
            return gemini_rejection("G8", _G8)
        self.responses += 1
        return gemini_rejection("G7", _G7) if self.responses > self.calls else None

    def _call_turn(self, i: int, calls: list[Any], before: str | None) -> Rejection | None:
        if before not in ("user", "tool"):
            return gemini_rejection("G6", _G6)
        self.calls, self.responses = len(calls), 0
        if self.gemini_3 and i > self.turn_start and not _signed(calls[0]):
            name = calls[0]["function"]["name"]
            return gemini_rejection("G1", _G1.format(name=name, position=self.position))
        return None


def _empty_text(msg: dict[str, Any]) -> Rejection | None:
    content = msg.get("content")
    if content == "" and not (msg["role"] == "assistant" and nonempty_list(msg.get("tool_calls"))):
        return gemini_rejection("G11", _G11)
    if isinstance(content, list) and any(p.get("text") == "" for p in content):
        return gemini_rejection("G11", _G11)
    return None


def _signed(call: dict[str, Any]) -> bool:
    google = call.get("extra_content", {}).get("google", {})
    signature = google.get("thought_signature")
    return isinstance(signature, str) and bool(signature)
