"""Parsing a request body once, and the limits that hold whatever the policy.

Everything here answers 400/413 in the OpenAI error shape through
:class:`~proxy.errors.BadRequestBody`; nothing here is ever forwarded.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson

from proxy.core.chat.messages import History
from proxy.errors import BadRequestBody
from proxy.settings import ServerSettings

#: Up to this size, counting brackets is cheaper than any other bound.
_COUNT_BELOW = 16_384
#: orjson serialises up to this many nested containers and refuses more ("Recursion limit
#: reached"); measured on orjson 3.10-3.13, pinned by tests/api/test_limits.py.
DUMPS_DEPTH = 254


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


class _Wrappers(threading.local):
    """Per thread: ``DUMPS_DEPTH - depth`` nested one-item lists, the innermost slot free."""

    def __init__(self) -> None:
        self.by_depth: dict[int, tuple[list[Any], list[Any]]] = {}

    def get(self, depth: int) -> tuple[list[Any], list[Any]]:
        found = self.by_depth.get(depth)
        if found is None:
            outer: list[Any] = [None]
            inner = outer
            for _ in range(DUMPS_DEPTH - depth - 1):
                below: list[Any] = [None]
                inner[0] = below
                inner = below
            found = self.by_depth[depth] = (outer, inner)
        return found


_WRAPPERS = _Wrappers()


def too_deep(value: Any, max_depth: int) -> bool:
    """Whether containers nest more than ``max_depth`` levels in a parsed JSON value.

    orjson's serialiser checks its nesting in C: ``value`` goes ``DUMPS_DEPTH - max_depth``
    lists deep and is serialised, which fails exactly when ``value`` nests more than
    ``max_depth`` levels (about 3x cheaper than walking the tree in Python, bench/sanitize.py).
    Limits beyond what orjson serialises fall back to the walk.
    """
    if max_depth >= DUMPS_DEPTH:
        return walk_too_deep(value, max_depth)
    outer, inner = _WRAPPERS.get(max_depth)
    inner[0] = value
    try:
        orjson.dumps(outer)
    except orjson.JSONEncodeError as exc:
        if "ecursion" in str(exc):  # "Recursion limit reached"
            return True
        return walk_too_deep(value, max_depth)  # a value orjson cannot write: decide by walking
    finally:
        inner[0] = None
    return False


def walk_too_deep(value: Any, max_depth: int) -> bool:
    """:func:`too_deep` by walking the tree, level by level rather than recursively (the limit
    may exceed Python's recursion limit)."""
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


def check_sizes(history: History, body_size: int, server: ServerSettings) -> None:
    """413 for more messages, or more tool calls in one message, than the proxy accepts."""
    messages = history.messages
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
    for i in history.index.callers:  # the messages with a ``tool_calls`` key (the index's pass)
        calls = messages[i]["tool_calls"]
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
