"""Upstream 4xx answers classified against the known provider error texts (provider-rules.md).

The kind is one of our rule names when the text says which rule the history broke (so the
records show histories the policy missed, by rule), else ``auth`` (401/403), ``rate_limit``
(429) or ``other``. Patterns avoid double quotes so they also match error texts nested as
escaped JSON strings (OpenRouter's ``metadata.raw``, Gemini's array of errors).
"""

from __future__ import annotations

import re

#: How much of an error body is searched; the known texts come first in every body seen.
SCAN_BYTES = 65_536

# Order matters: the first match wins, so the narrow texts come before the broad ones.
_TABLE: tuple[tuple[str, str], ...] = (
    ("thought_signature", r"thought[_ ]signature"),  # G1, G5
    ("tool_call_shape", r"tool_calls\[\d+\]\.index"),  # O12: the streaming `index` left behind
    ("tool_call_shape", r"function\.name.?: empty string"),  # O11
    # O12/O13, O22, Groq; R1-era DeepSeek forbidding reasoning_content (D7)
    (
        "unknown_message_field",
        r"unknown parameter|is unsupported, did you mean|property '[^']*' is unsupported"
        r"|additional properties are not allowed|remove the reasoning_content",
    ),
    ("missing_reasoning_content", r"reasoning_content"),  # D3, D4, Kimi
    # O1 (preceeding), D1 (preceding), Qwen; O3; Anthropic; Responses API
    (
        "orphan_tool_result",
        r"must be a response to a prece{1,2}ding message|not found in .?tool_calls.? of previous"
        r"|unexpected .?tool_use_id.? found|no tool call found for function call output",
    ),
    # O2 / Qwen, D2, G7, Mistral, Anthropic, Responses API
    (
        "missing_tool_result",
        r"did not have response messages|insufficient tool messages"
        r"|number of function response parts|not the same number of function calls"
        r"|ids were found without .?tool_result|no tool output found for function call",
    ),
    ("duplicate_tool_result", r"duplicate value for .?tool_call_id"),  # O4
    # O5; Ollama /v1
    (
        "arguments_not_string",
        r"arguments.?: expected a string, but got"
        r"|cannot unmarshal \w+ into go struct field \S*arguments of type string",
    ),
    # vLLM, OpenRouter hosts
    (
        "arguments_invalid_json",
        r"jsondecodeerror|extra data: line \d+ column|unterminated string starting at",
    ),
    ("empty_tool_calls", r"tool_calls.?: empty array|empty tool_calls"),  # O7, Qwen
    ("too_many_tool_calls", r"tool_calls.?: array too long"),  # O8 (not O9's `tools`)
    # O10, Responses `call_id`, Mistral / vLLM 9-char ids, Anthropic id pattern
    (
        "tool_call_id_format",
        r"\.id.?: string too long|call_id.?: string too long|tool call id was .* but must be"
        r"|tool_use\.id: string should match pattern",
    ),
    ("function_call_turn_order", r"function call turn comes immediately after"),  # G6
    # G8 (native); MiniMax-style relays
    (
        "misplaced_tool_result",
        r"function response turn comes immediately after|result does not follow tool call",
    ),
    # D14, O20, Qwen, Volcengine
    (
        "developer_role",
        r"unknown variant .?developer|does not support .?developer|developer is not one of"
        r"|invalid value: .?developer",
    ),
    ("legacy_function_role", r"does not support .?function.? with this model"),  # O21
    ("content_null", r"got:? null"),  # O14, G9
    ("empty_text", r"empty text parameter|text content blocks must be non-empty"),  # G11
    # D9, D10, Ollama native
    (
        "content_parts_unsupported",
        r"invalid type: sequence, expected a string|untagged enum chatcompletionrequestcontent"
        r"|cannot unmarshal array into go struct field \S*content of type string",
    ),
    ("image_outside_user", r"image urls are only allowed"),  # O18
    (
        "empty_assistant_message",
        r"content or tool_calls must be set|must have either content or tool_calls",
    ),  # D12, Mistral
    ("consecutive_same_role", r"does not support successive user or assistant"),  # D8
    (
        "tool_message_name",
        r"function_response\.name: name cannot be empty|tools should have a name",
    ),
)
_PATTERNS = tuple((kind, re.compile(pattern, re.IGNORECASE)) for kind, pattern in _TABLE)

#: Every kind :func:`classify_upstream_error` can return.
KINDS = tuple(dict.fromkeys([kind for kind, _ in _TABLE] + ["auth", "rate_limit", "other"]))


def classify_upstream_error(status: int, body: bytes | str) -> str | None:
    """A stable kind for an upstream 4xx answer; None for any other status."""
    if not 400 <= status < 500:
        return None
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if isinstance(body, bytes):
        text = body[:SCAN_BYTES].decode("utf-8", "replace")
    else:
        text = body[:SCAN_BYTES]
    for kind, pattern in _PATTERNS:
        if pattern.search(text):
            return kind
    return "other"
