"""Strict emulation of Ollama's OpenAI-compatible `/v1/chat/completions`.

Ollama decodes the body into Go structs (``encoding/json``), converts the messages
(ollama/ollama ``openai/openai.go``, ``FromChatRequest``), then renders the model's template.
Errors are ``{"error":{"message":…,"type":"invalid_request_error","param":null,"code":null}}``.

Rows implemented (provider-rules.md §4 "Ollama", providers-second-tier.md B1):

- L1 (§4 Ollama ``/v1`` arguments type): ``arguments`` not a string fails the decode of the whole
  body (so before any other message check): ``json: cannot unmarshal object into Go struct field
  .messages.tool_calls.function.arguments of type string`` (``array``, ``number``, ``bool``
  likewise; ``null`` decodes to ``""``).
- L2 (``FromCompletionToolCall``, source only): an ``arguments`` string that is not a JSON
  object (or ``null``) fails the conversion: ``invalid tool call arguments``; ``""`` included.
- L4 (``FromChatRequest``, source only): ``content`` neither a string nor an array on a message
  without tool calls: ``invalid message content type: <nil>`` (Go's ``%T``); a content part that
  is not a text or image_url object: ``invalid message format``.
- L3 (B1 Mistral via Ollama): Mistral-family models (``mistral``, ``mixtral``, ``devstral``,
  ``magistral``, ``codestral``, ``ministral`` in ``model``) reject a tool result whose id answers
  no call of the assistant message it follows: ``Unexpected tool call id b87624841 in tool
  results``.

Not implemented: ``content: ""`` with tool calls (§4 REPORTED 400, no text); the native
``/api/chat`` (arguments as objects). Unknown keys are ignored (Go's decoder). Other decode
errors follow Go's wording under ``L-schema``.
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator.common import Rejection
from proxy.emulator.tier2 import Dialect, compact, first_fault, python_json

_MISTRAL = re.compile(r"mistral|mixtral|devstral|magistral|codestral|ministral", re.IGNORECASE)
_GO_KIND = ((bool, "bool"), (int, "number"), (float, "number"), (str, "string"), (list, "array"))
_GO_TYPE = ((bool, "bool"), (int, "float64"), (float, "float64"), (dict, "map[string]interface {}"))
_STRING_FIELDS = ("role", "tool_call_id", "name")
# Go's name for ollama's anonymous ToolCall.Function struct type
_FUNCTION_STRUCT = (
    'struct { Name string "json:\\"name\\""; Arguments string "json:\\"arguments\\"" }'
)


def reject(rule: str, message: str, status: int = 400) -> Rejection:
    """Ollama's OpenAI-compatible error (``NewError``: the type follows the status)."""
    type_ = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
    body = compact({"error": {"message": message, "type": type_, "param": None, "code": None}})
    return Rejection(status, body, rule, message)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error Ollama reports for this request body, or None when it is accepted."""
    if not isinstance(body, dict):
        return _unmarshal("L-json", _go_kind(body), "", "openai.ChatCompletionRequest")
    messages = body.get("messages")
    if messages is not None and not isinstance(messages, list):
        return _unmarshal("L-schema", _go_kind(messages), ".messages", "[]openai.Message")
    messages = messages or []
    for msg in messages:
        found = _decode(msg)
        if found is not None:
            return found
    for msg in messages:
        found = _convert(msg)
        if found is not None:
            return found
    if _MISTRAL.search(str(body.get("model", ""))):
        return _mistral_ids(messages)
    return None


def _go_kind(value: Any) -> str:
    return next((name for kind, name in _GO_KIND if isinstance(value, kind)), "object")


def _unmarshal(rule: str, kind: str, field: str, go_type: str) -> Rejection:
    text = f"json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"
    if not field:
        text = f"json: cannot unmarshal {kind} into Go value of type {go_type}"
    return reject(rule, text)


def _decode(msg: Any) -> Rejection | None:
    """Go's decode of one message: typed fields only, unknown keys ignored, null skipped."""
    if msg is None:
        return None
    if not isinstance(msg, dict):
        return _unmarshal("L-schema", _go_kind(msg), ".messages", "openai.Message")
    wrong = [key for key in _STRING_FIELDS if not isinstance(msg.get(key, ""), str | None)]
    if wrong:
        return _unmarshal("L-schema", _go_kind(msg[wrong[0]]), f".messages.{wrong[0]}", "string")
    return _decode_calls(msg.get("tool_calls"))


def _decode_calls(calls: Any) -> Rejection | None:
    if calls is None:
        return None
    if not isinstance(calls, list):
        return _unmarshal("L-schema", _go_kind(calls), ".messages.tool_calls", "[]openai.ToolCall")
    for call in calls:
        found = _decode_call(call)
        if found is not None:
            return found
    return None


def _decode_call(call: Any) -> Rejection | None:
    if call is not None and not isinstance(call, dict):
        return _unmarshal("L-schema", _go_kind(call), ".messages.tool_calls", "openai.ToolCall")
    function = call.get("function") if call else None
    if function is not None and not isinstance(function, dict):
        field = ".messages.tool_calls.function"
        return _unmarshal("L-schema", _go_kind(function), field, _FUNCTION_STRUCT)
    arguments = function.get("arguments") if function else None
    if arguments is not None and not isinstance(arguments, str):
        field = ".messages.tool_calls.function.arguments"
        return _unmarshal("L1", _go_kind(arguments), field, "string")
    return None


def _convert(msg: dict[str, Any] | None) -> Rejection | None:
    """``FromChatRequest`` for one decoded message."""
    msg = msg or {}
    content, calls = msg.get("content"), msg.get("tool_calls")
    if isinstance(content, list):
        if not all(map(_part_ok, content)):
            return reject("L4", "invalid message format")
    elif not isinstance(content, str) and calls is None:
        return reject("L4", f"invalid message content type: {_go_type(content)}")
    for call in calls or ():
        function = (call or {}).get("function") or {}
        value, error = python_json(function.get("arguments") or "")
        if error is not None or not (value is None or isinstance(value, dict)):
            return reject("L2", "invalid tool call arguments")
    return None


def _go_type(value: Any) -> str:
    if value is None:
        return "<nil>"
    return next((name for kind, name in _GO_TYPE if isinstance(value, kind)), "string")


def _part_ok(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    if part.get("type") == "text":
        return isinstance(part.get("text"), str)
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    return part.get("type") == "image_url" and isinstance(url, str)


def _mistral_ids(messages: list[Any]) -> Rejection | None:
    history = [msg for msg in messages if isinstance(msg, dict)]
    fault = first_fault(history, trailing_ok=True)
    if fault is None or fault.kind == "unanswered":
        return None  # the template checks result ids only
    return reject("L3", f"Unexpected tool call id {fault.call_id} in tool results")


DIALECT = Dialect(
    prefix="L",
    validate=validate,
    reject=reject,
    not_found="404 page not found",  # gin's default text
    not_json="invalid character 'o' in literal null (expecting 'u')",  # Go's text for b"not json"
    forced={
        401: "unauthorized",
        429: "too many requests",  # ours
        500: "an error was encountered while running the model",
        503: "server busy, please try again.  maximum pending requests exceeded",
    },
)
