"""The strict Messages emulators (``POST …/v1/messages`` and ``…/messages/count_tokens``) of
Anthropic, DeepSeek, Kimi, GLM and MiniMax (issue 21, evidence /work/shared/anthropic-messages.md).

Written apart from the sanitizer (``proxy.core``), so they can judge its output:

- `validate_messages(provider, body, raw)` → `Rejection` (exact status, body bytes and headers,
  the M rule id) or None (see `messages_validate` for each provider's rules and order);
- `messages_reply(provider, raw, chunks)` → a `Rejection`, the Message JSON bytes, or the SSE
  frames when ``stream: true`` (`messages_answer`);
- `count_tokens_reply(provider, raw)` → ``{"input_tokens": n}`` for a body the provider takes
  (``max_tokens`` not required there), else its `Rejection`.

Paths per provider (`MESSAGES_PREFIXES`, the first is the real endpoint's): Anthropic ``/v1``,
DeepSeek ``/anthropic/v1``, Kimi ``/anthropic/v1`` (and ``/coding/v1``), GLM
``/api/anthropic/v1``, MiniMax ``/anthropic/v1``; each also under plain ``/v1``.
"""

from __future__ import annotations

from typing import Any

import orjson

from proxy.emulator.common import Rejection
from proxy.emulator.messages_answer import plan_message
from proxy.emulator.messages_errors import MESSAGES_PROVIDERS, not_json
from proxy.emulator.messages_events import message_body, message_events, message_json
from proxy.emulator.messages_threads import Threads
from proxy.emulator.messages_validate import validate_messages

__all__ = [
    "MESSAGES_PREFIXES",
    "MESSAGES_PROVIDERS",
    "count_tokens_reply",
    "messages_reply",
    "validate_messages",
]

MESSAGES_PREFIXES = {
    "anthropic": ("/v1",),
    "deepseek": ("/anthropic/v1", "/v1"),
    "kimi": ("/anthropic/v1", "/coding/v1", "/v1"),
    "glm": ("/api/anthropic/v1", "/v1"),
    "minimax": ("/anthropic/v1", "/v1"),
}
#: Anthropic's ``GET /v1/models`` list (its own shape).
ANTHROPIC_MODELS = ("claude-sonnet-4-6", "claude-opus-4-8", "claude-haiku-4-5")
_CREATED_AT = "2025-01-01T00:00:00Z"


def _parse(provider: str, raw: bytes) -> Any | Rejection:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return not_json(provider, error.lineno, error.colno)


def messages_reply(
    provider: str, raw: bytes, chunks: int | None, threads: Threads | None = None
) -> Rejection | bytes | list[bytes]:
    """The answer to ``POST …/messages``: a rejection, a Message, or SSE frames. With
    `threads` (Anthropic's), a threaded request is judged and answered on its whole history."""
    body = _parse(provider, raw)
    if isinstance(body, Rejection):
        return body
    if threads is not None and isinstance(body, dict) and isinstance(body.get("messages"), list):
        history = threads.history(body)
        if isinstance(history, Rejection):
            return history
        body = {**body, "messages": history}
    rejection = validate_messages(provider, body, raw)
    if rejection is not None:
        return rejection
    reply = plan_message(provider, body, raw)
    if threads is not None:
        threads.keep(body, body["messages"], message_json(reply))
    return message_events(reply, chunks) if body.get("stream") is True else message_body(reply)


def count_tokens_reply(provider: str, raw: bytes) -> Rejection | bytes:
    """The answer to ``POST …/messages/count_tokens`` (the other providers' support for this
    path is not documented: answering it everywhere is ours, so Claude Code can run)."""
    body = _parse(provider, raw)
    if isinstance(body, Rejection):
        return body
    if isinstance(body, dict) and "max_tokens" not in body:
        body = {**body, "max_tokens": 1}  # count_tokens takes no max_tokens
    rejection = validate_messages(provider, body, raw)
    if rejection is not None:
        return rejection
    return orjson.dumps({"input_tokens": max(len(raw) // 4, 1)})


def anthropic_models() -> bytes:
    """Anthropic's model list (``GET /v1/models``)."""
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": _CREATED_AT}
        for m in ANTHROPIC_MODELS
    ]
    page = {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
    return orjson.dumps(page)
