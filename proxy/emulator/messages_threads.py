"""Anthropic's server-side message threads (beta ``message-threads-2026-08-12``), as the
``anthropic`` SDK (>= 2.x) uses them: its tool runner and ``client.beta.messages.thread()`` send
``"thread": {"type": "create"}`` with the whole history, then ``{"type": "continue",
"previous_message_id": "msg_…"}`` with only the new messages; the server prepends what it holds.

Read from the SDK (anthropic/lib/threads/_thread_state.py), not from the evidence file: the
error for an unknown ``previous_message_id`` carries ``error.details.error_code:
"thread_not_found"`` (the SDK then replays the whole history under a new thread); its status
and message are ours. Only the Anthropic emulator keeps threads.
"""

from __future__ import annotations

from typing import Any

from proxy.emulator.common import Rejection
from proxy.emulator.messages_errors import compact

Messages = list[dict[str, Any]]
#: Threads kept per emulator before the oldest are forgotten (a test's loop needs a handful).
CAPACITY = 1024


class Threads:
    """The conversations an emulator holds, by the id of their last reply."""

    def __init__(self) -> None:
        self._held: dict[str, Messages] = {}

    def history(self, body: dict[str, Any]) -> Messages | Rejection:
        """The whole history of a request: its messages after what its thread holds."""
        thread, messages = body.get("thread"), body["messages"]
        if not isinstance(thread, dict) or thread.get("type") != "continue":
            return list(messages)
        held = self._held.get(str(thread.get("previous_message_id")))
        return not_found(thread) if held is None else held + list(messages)

    def keep(self, body: dict[str, Any], history: Messages, reply: dict[str, Any]) -> None:
        """Hold the history and the reply of a threaded request under the reply's id."""
        if not isinstance(body.get("thread"), dict):
            return
        if len(self._held) >= CAPACITY:
            self._held.pop(next(iter(self._held)))
        answer = {"role": "assistant", "content": reply["content"]}
        self._held[reply["id"]] = [*history, answer]


def not_found(thread: dict[str, Any]) -> Rejection:
    message = f"thread not found: {thread.get('previous_message_id')}"  # wording ours
    error = {
        "type": "invalid_request_error",
        "message": message,
        "details": {"error_code": "thread_not_found"},
    }
    return Rejection(400, compact({"type": "error", "error": error}), "thread", message)
