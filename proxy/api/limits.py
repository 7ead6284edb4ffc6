"""Parsing a request body once, and the limits that hold whatever the policy.

Everything here answers 400/413 in the OpenAI error shape through
:class:`~proxy.errors.BadRequestBody`; nothing here is ever forwarded.
"""

from __future__ import annotations

from typing import Any

import orjson

from proxy.core.chat.messages import Message
from proxy.errors import BadRequestBody
from proxy.settings import ServerSettings

#: Up to this size, counting brackets is cheaper than walking the parsed body.
_COUNT_BELOW = 16_384


def parse(body: bytes, max_depth: int) -> Any:
    """The JSON body, parsed once; 400 when it is not JSON or nests deeper than ``max_depth``."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BadRequestBody(f"The request body is not valid JSON: {exc}.") from exc
    if not _surely_shallow(body, max_depth) and too_deep(data, max_depth):
        raise BadRequestBody(
            f"The request body nests JSON deeper than {max_depth} levels (server.max_json_depth)."
        )
    return data


def _surely_shallow(body: bytes, max_depth: int) -> bool:
    # Nesting d levels takes d opening brackets (brackets inside strings only add to the count).
    return len(body) < _COUNT_BELOW and body.count(b"{") + body.count(b"[") <= max_depth


def too_deep(value: Any, max_depth: int) -> bool:
    """Whether containers nest more than ``max_depth`` levels in a parsed JSON value.

    Level by level rather than recursive: the limit may exceed Python's recursion limit.
    """
    level = [value] if type(value) in (dict, list) else []
    for _ in range(max_depth):
        below: list[Any] = []
        for node in level:
            for child in node.values() if type(node) is dict else node:
                if type(child) is dict or type(child) is list:
                    below.append(child)
        if not below:
            return False
        level = below
    return True


def check_sizes(messages: list[Message], body_size: int, server: ServerSettings) -> None:
    """413 for more messages, or more tool calls in one message, than the proxy accepts."""
    if len(messages) > server.max_messages:
        raise BadRequestBody(
            f"'messages' has {len(messages)} entries; this proxy accepts at most "
            f"{server.max_messages} (server.max_messages).",
            param="messages",
            status=413,
        )
    limit = server.max_tool_calls_per_message
    if body_size <= 2 * limit:  # every call takes at least two bytes ("1,"): none can be over
        return
    for i, message in enumerate(messages):
        calls = message.get("tool_calls")
        if type(calls) is list and len(calls) > limit:
            raise BadRequestBody(
                f"messages[{i}].tool_calls has {len(calls)} calls; this proxy accepts at most "
                f"{limit} in one message (server.max_tool_calls_per_message).",
                param=f"messages[{i}].tool_calls",
                status=413,
            )


def model_of(body: bytes) -> Any:
    """``model`` of a JSON object body, for routing requests the proxy does not sanitize."""
    if not body or body[:1] not in (b"{", b" ", b"\n", b"\r", b"\t"):
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return data.get("model") if type(data) is dict else None
