"""Strict emulation of a vLLM OpenAI-compatible server (`vllm serve`, `/v1/chat/completions`).

A template server: most rules come from the model's chat template or tokenizer, so the
``model`` picks them. Errors are ``{"error":{"message":…,"type":"BadRequestError","param":null,
"code":400}}``.

Rows implemented (provider-rules.md §4 "vLLM", providers-second-tier.md B1):

- V3 (§4 vLLM empty ``tools``): ``Value error, `tools` must not be an empty array.`` (the
  excerpt quoted; pydantic's surrounding text is not reproduced).
- V1 (§4 vLLM arguments ``json.loads``-ed): a historical ``arguments`` string that is not JSON:
  ``json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 1121 (char
  1120)`` (Python's own message for the string).
- V2 (B1 vLLM/SGLang/LocalAI arguments must be an object): JSON that is not an object:
  ``TypeError: Can only get item pairs from a mapping.`` (the template's ``|items``; now a 400
  after vllm-project/vllm PR#48922; later vLLM coerces to ``{}``, PR#50861: we keep the
  rejection, the documented default of the cited reports).
- V4 (B1 llama.cpp / LM Studio Gemma): Gemma templates (``model`` containing ``gemma``) require
  strict alternation after an optional first system message, tool turns included:
  ``Conversation roles must alternate user/assistant/user/assistant/...``.
- Mistral-family models (``mistral``, ``mixtral``, ``devstral``, ``magistral``, ``codestral``,
  ``ministral`` in ``model``; vLLM's ``--tokenizer-mode mistral``) run mistral-common's
  validator: rows M1, M2, M3, M4, M5, M7 of `mistral` with its texts (mistralai/mistral-vibe#578:
  ``Unexpected role 'user' after role 'tool'`` from local vLLM, type ``BadRequestError``).
  Unknown keys are not rejected there (no pydantic layer).

Other models (Qwen, Llama, gpt-oss…) use templates with no role-order check. Order: V3, the
arguments of every assistant message in order (V1, V2), then the model's template rules.
Malformed values: ``V-schema`` (ours).
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator import mistral
from proxy.emulator.common import Rejection, nonempty_list
from proxy.emulator.tier2 import Dialect, compact, python_json

ROLES = ("system", "developer", "user", "assistant", "tool")
_MISTRAL = re.compile(r"mistral|mixtral|devstral|magistral|codestral|ministral", re.IGNORECASE)
_GEMMA = re.compile(r"gemma", re.IGNORECASE)
_V4 = "Conversation roles must alternate user/assistant/user/assistant/..."
_TYPES = {401: "Unauthorized", 404: "NotFoundError", 429: "RateLimitError"}


def reject(rule: str, message: str, status: int = 400) -> Rejection:
    """vLLM's ``ErrorResponse`` (the exception class as ``type``, the status as ``code``)."""
    type_ = _TYPES.get(status, "BadRequestError" if status < 500 else "InternalServerError")
    body = compact({"error": {"message": message, "type": type_, "param": None, "code": status}})
    return Rejection(status, body, rule, message)


def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
    """The first error this vLLM server reports for the request body, or None if accepted."""
    if not isinstance(body, dict):
        return reject("V-json", "Input should be a valid dictionary")  # ours
    if body.get("tools") == []:
        return reject("V3", "Value error, `tools` must not be an empty array.")
    messages = body.get("messages")
    if not nonempty_list(messages):
        return reject("V-schema", "messages: List should have at least 1 item")  # ours
    for i, msg in enumerate(messages):
        found = _shape(msg, i) or _arguments(msg)
        if found is not None:
            return found
    model = str(body.get("model", ""))
    if _MISTRAL.search(model):
        problem = mistral.common_problem(messages)
        return None if problem is None else reject(*problem)
    return _alternation(messages) if _GEMMA.search(model) else None


def _shape(msg: Any, i: int) -> Rejection | None:
    """Wording ours (vLLM's pydantic texts vary with the version)."""
    if not isinstance(msg, dict) or msg.get("role") not in ROLES:
        return reject("V-schema", f"messages.{i}: Input tag does not match any expected role")
    calls = msg.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(map(_call_ok, calls))):
        return reject("V-schema", f"messages.{i}.tool_calls: Input should be a valid list")
    return None


def _call_ok(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("function"), dict)


def _arguments(msg: dict[str, Any]) -> Rejection | None:
    if msg["role"] != "assistant":
        return None
    for call in msg.get("tool_calls") or ():
        arguments = call["function"].get("arguments")
        if isinstance(arguments, dict):
            continue  # already a mapping: the template iterates it
        if not isinstance(arguments, str):
            return reject("V2", "TypeError: Can only get item pairs from a mapping.")
        value, error = python_json(arguments)
        if error is not None:
            return reject("V1", error)
        if not isinstance(value, dict):
            return reject("V2", "TypeError: Can only get item pairs from a mapping.")
    return None


def _alternation(messages: list[dict[str, Any]]) -> Rejection | None:
    """Gemma's template: ``(role == 'user') != (loop.index0 % 2 == 0)`` raises."""
    turns = messages[1:] if messages[0]["role"] == "system" else messages
    for k, msg in enumerate(turns):
        if (msg["role"] == "user") != (k % 2 == 0):
            return reject("V4", _V4)
    return None


DIALECT = Dialect(
    prefix="V",
    validate=validate,
    reject=reject,
    not_found="Not Found",  # FastAPI's default 404 text
    not_json="JSON decode error",  # FastAPI's RequestValidationError for a bad body, shortened
    forced={
        401: "Unauthorized",
        429: "Too Many Requests",  # ours: vLLM has no rate limit of its own
        500: "Internal Server Error",
        503: "The server is overloaded, please retry later.",  # ours
    },
)
