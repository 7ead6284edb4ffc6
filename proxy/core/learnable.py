"""Which refused fields may be learned: stripped up front from every later request. Pure.

A learned strip changes other clients' requests (:mod:`proxy.api.learned`), so only an optional
extra may be learned: a request-level key, a key of a message / input item, of one of its tool
calls or of one of its content parts, and never a key the API requires, that carries the user's
content or that links items together (:data:`NEVER_LEARNED`, any ``*_id``). A refusal of such a
field still repairs the one request it refused (:func:`proxy.core.retry.plan_retry`); it is
never remembered.
"""

from __future__ import annotations

import re

#: Keys never learned: required by an API, carrying content, naming or linking items, or
#: changing what the model is asked (a strip of those would change the answer, not the form).
NEVER_LEARNED = frozenset(
    {
        # what every request needs, and the user's content
        "model",
        "messages",
        "input",
        "instructions",
        "system",
        "role",
        "content",
        "text",
        "parts",
        "output",
        "image_url",
        "input_audio",
        "file",
        # tool calls and their links
        "tools",
        "tool_choice",
        "tool_calls",
        "function",
        "functions",
        "function_call",
        "arguments",
        "name",
        "type",
        "id",
        "ids",
        "call_id",
        "tool_call_id",
        # what the model is asked to produce
        "stream",
        "response_format",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
    }
)

#: The shapes a learned pattern may have: a request-level key; a key of every message / input
#: item; a key of every tool call or content part of every item.
_SHAPES = re.compile(
    r"(?:(?:messages|input)\[\*\]\.(?:(?:tool_calls|content)\[\*\]\.)?)?(?P<key>[A-Za-z_]\w*)",
    re.ASCII,
)


def learnable(pattern: str) -> bool:
    """Whether ``pattern`` (``messages[*].tool_calls[*].index``) names an optional extra."""
    shape = _SHAPES.fullmatch(pattern)
    if shape is None:
        return False
    key = shape.group("key")
    return key not in NEVER_LEARNED and not key.endswith(("_id", "_ids"))
