"""Chat-completions emulators of the providers whose main API is Messages-shaped or thin on
evidence: Zhipu GLM, MiniMax and Anthropic's OpenAI-compatible endpoint.

Rows (provider-rules.md §4): GLM answers every message fault with the generic
``{"error":{"code":"1214","message":"messages 参数非法。请检查文档。"}}`` (400; text V, cause R);
MiniMax words pairing as ``invalid params, tool call result does not follow tool call (2013)``
(V) and ``invalid params, tool result's tool id(<id>) not found (2013)`` (V on its Messages
endpoint, MiniMax-M2#76), in the ``bad_request_error`` variant of its envelope with
``http_code`` (anthropic-messages.md §2). Anthropic's compatibility layer translates to Messages
(provider-rules.md note 16), so it words pairing as M1/M2 with chat indexes (ours).

Strictness beyond the pairing walk is OpenAI-like and ours: a JSON object with a non-empty
``messages`` list of objects whose ``role`` is system/user/assistant/tool; unanswered calls at
the very end are accepted (OpenAI's O23).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from proxy.emulator.common import Rejection, nonempty_list
from proxy.emulator.messages_errors import GLM_PARAMS, anthropic_shape, compact
from proxy.emulator.tier2 import Dialect, Fault, first_fault

ROLES = ("system", "user", "assistant", "tool")
_FORCED = {401: "invalid api key", 429: "rate limit exceeded", 500: "internal error"}  # ours


def glm_reject(rule: str, message: str, status: int = 400) -> Rejection:
    code = "1214" if status == 400 else str(status)  # other statuses' codes: ours
    return Rejection(status, compact({"error": {"code": code, "message": message}}), rule, message)


def minimax_reject(rule: str, message: str, status: int = 400) -> Rejection:
    error = {"type": "bad_request_error", "message": message, "http_code": str(status)}
    request_id = hashlib.blake2b(message.encode(), digest_size=8).hexdigest()  # format: ours
    payload = {"type": "error", "error": error, "request_id": request_id}
    return Rejection(status, compact(payload), rule, message)


def anthropic_reject(rule: str, message: str, status: int = 400) -> Rejection:
    return anthropic_shape("anthropic", rule, message, status)


def _shape(body: Any) -> str | None:
    """The shape problem of a chat body (wording ours), or None."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not nonempty_list(messages):
        return "messages must be a non-empty array"
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ROLES:
            return f"messages[{i}]: invalid role"
        calls = msg.get("tool_calls")
        if calls is not None and not (isinstance(calls, list) and all(map(_call_ok, calls))):
            return f"messages[{i}]: invalid tool_calls"
    return None


def _call_ok(call: Any) -> bool:
    return isinstance(call, dict) and isinstance(call.get("id"), str)


def _validator(
    prefix: str, reject: Callable[[str, str, int], Rejection], words: Callable[[Fault], str]
) -> Callable[[Any, bytes | None], Rejection | None]:
    def validate(body: Any, raw: bytes | None = None) -> Rejection | None:
        problem = _shape(body)
        if problem is not None:
            return reject(f"{prefix}-schema", problem, 400)
        fault = first_fault(body["messages"], trailing_ok=True)
        return None if fault is None else reject(f"{prefix}-pairing", words(fault), 400)

    return validate


def _minimax_words(fault: Fault) -> str:
    if fault.kind == "unanswered":
        return "invalid params, tool call result does not follow tool call (2013)"
    return f"invalid params, tool result's tool id({fault.call_id}) not found (2013)"


def _anthropic_words(fault: Fault) -> str:
    if fault.kind == "unanswered":
        return (
            f"messages.{fault.block}: `tool_use` ids were found without `tool_result` blocks "
            f"immediately after: {', '.join(fault.missing)}. Each `tool_use` block must have a "
            "corresponding `tool_result` block in the next message."
        )
    return (
        f"messages.{fault.index}.content.0: unexpected `tool_use_id` found in `tool_result` "
        f"blocks: {fault.call_id}. Each `tool_result` block must have a corresponding "
        "`tool_use` block in the previous message."
    )


GLM = Dialect(
    prefix="Z",
    validate=_validator("Z", glm_reject, lambda fault: GLM_PARAMS),
    reject=glm_reject,
    not_found="Not Found",  # ours
    not_json="Invalid API parameter, please check the documentation.",  # GLM's 1210 text
    forced=_FORCED,
)
MINIMAX = Dialect(
    prefix="MM",
    validate=_validator("MM", minimax_reject, _minimax_words),
    reject=minimax_reject,
    not_found="Not Found",  # ours
    not_json="invalid params, request body is not valid JSON (2013)",  # ours
    forced=_FORCED,
)
ANTHROPIC = Dialect(
    prefix="A",
    validate=_validator("A", anthropic_reject, _anthropic_words),
    reject=anthropic_reject,
    not_found="Not Found",
    not_json="There was an error parsing the body of your request.",  # ours
    forced={
        401: "invalid x-api-key",
        429: "Number of request tokens has exceeded your per-minute rate limit",
        500: "Internal server error",
        529: "Overloaded",
    },
)
