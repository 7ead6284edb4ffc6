"""Upstream 4xx bodies → ``upstream_error_kind``, over the exact texts of the evidence files.

The kinds are the signature catalogue's rules (``proxy.core.signatures``); Responses texts get
the Responses rules.
"""

# ruff: noqa: E501 -- the provider texts are quoted whole, exactly as provider-rules.md has them

from __future__ import annotations

import json

import pytest

from proxy.core.registry import ALL_RULES
from proxy.core.signatures import match
from proxy.repairlog import classify_upstream_error
from proxy.repairlog.classify import KINDS
from tests.core.signature_texts import TEXTS, Text
from tests.core.test_signatures import PENDING

# (provider-rules.md row, status, exact text, kind)
CASES: list[tuple[str, int, str, str]] = [
    (
        "O1",
        400,
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        "orphan_tool_result",
    ),
    (
        "O2",
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_ctiGXrgM0r61c6nkf2v7zbKb",
        "missing_tool_result",
    ),
    (
        "O3",
        400,
        "Invalid parameter: 'tool_call_id' of 'call_XXXXXXXXX' not found in 'tool_calls' of previous message.",
        "orphan_tool_result",
    ),
    (
        "O4",
        400,
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_gmd4tanjXcwOxfPawOnDmq6R', in messages[7] and messages[8].",
        "duplicate_tool_result",
    ),
    (
        "O5",
        400,
        "Invalid type for 'messages[2].tool_calls[0].function.arguments': expected a string, but got an object instead.",
        "arguments_not_string",
    ),
    (
        "O7",
        400,
        "Invalid 'messages[2].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        "empty_tool_calls",
    ),
    (
        "O8",
        400,
        "Invalid 'messages[3].tool_calls': array too long. Expected an array with maximum length 128, but got an array with length 200 instead.",
        "too_many_tool_calls",
    ),
    (
        "O9",
        400,
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 325 instead.",
        "other",
    ),
    (
        "O10",
        400,
        "Invalid 'messages[36].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 51 instead.",
        "tool_call_id_format",
    ),
    (
        "O11",
        400,
        "Invalid 'messages[69].tool_calls[0].function.name': empty string. Expected a string with minimum length 1, but got an empty string instead.",
        "tool_call_shape",
    ),
    ("O12", 400, "Unknown parameter: 'messages[1].tool_calls[0].index'.", "unknown_message_field"),
    (
        "O13",
        400,
        "400 Unknown parameter: 'messages[0].content[0].cache_control'.",
        "unknown_message_field",
    ),
    ("O14", 400, "Invalid value for 'content': expected a string, got null.", "content_null"),
    (
        "O15",
        400,
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        "other",
    ),
    (
        "O16",
        400,
        "Invalid 'messages[2].name': string does not match pattern. Expected a string that matches the pattern '^[^\\s<\\|\\\\/>]+$'.",
        "unknown_message_field",
    ),
    (
        "O18",
        400,
        "Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but this message with role 'assistant' contains an image URL.",
        "image_outside_user",
    ),
    (
        "O18",
        400,
        "Invalid 'messages[234]'. Image URLs are only allowed for messages with role 'user', but this message with role 'tool' contains an image URL.",
        "image_outside_user",
    ),
    (
        "O19",
        400,
        "Unsupported value: 'messages[0].role' does not support 'system' with this model.",
        "other",
    ),
    (
        "O20",
        400,
        "Unsupported value: 'messages[0].role' does not support 'developer' with this model.",
        "developer_role",
    ),
    (
        "O21",
        400,
        "Unsupported value: 'messages[59].role' does not support 'function' with this model.",
        "legacy_function_role",
    ),
    (
        "O22",
        400,
        "Additional properties are not allowed ('cosplay' was unexpected) - 'messages.1'",
        "unknown_message_field",
    ),
    (
        "Responses",
        400,
        "Invalid 'input[95].call_id': string too long. Expected a string with maximum length 64, but got a string with length 116 instead.",
        "responses_call_id_format",
    ),
    (
        "Responses",
        400,
        "No tool call found for function call output with call_id call_i1njW2L3AzcgxnVh5SP1m5sK.",
        "responses_orphan_output",
    ),
    (
        "D1",
        400,
        "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
        "orphan_tool_result",
    ),
    (
        "D2",
        400,
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. (insufficient tool messages following tool_calls message)",
        "missing_tool_result",
    ),
    (
        "D3",
        400,
        "Missing `reasoning_content` field in the assistant message at message index 2. For more information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
        "missing_reasoning_content",
    ),
    (
        "D4",
        400,
        "The `reasoning_content` in the thinking mode must be passed back to the API.",
        "missing_reasoning_content",
    ),
    (
        "D7",
        400,
        "The reasoning_content is an intermediate result for display purposes only and will not be included in the context for inference. Please remove the reasoning_content from your message to reduce network traffic.",
        "unknown_message_field",
    ),
    (
        "D8",
        400,
        "deepseek-reasoner does not support successive user or assistant messages (messages[1] and messages[2] in your input). You should interleave the user/assistant messages in the message sequence.",
        "consecutive_same_role",
    ),
    (
        "D9",
        400,
        "Failed to deserialize the JSON body into the target type: messages[9]: invalid type: sequence, expected a string at line 1 column 45446",
        "content_parts_unsupported",
    ),
    (
        "D9",
        422,
        "Failed to deserialize the JSON body into the target type: messages[9]: invalid type: sequence, expected a string at line 1 column 45446",
        "content_parts_unsupported",
    ),
    (
        "D10",
        400,
        "Failed to deserialize the JSON body into the target type: messages[2]: data did not match any variant of untagged enum ChatCompletionRequestContent at line 1 column 18254",
        "content_parts_unsupported",
    ),
    (
        "D11",
        400,
        "Failed to deserialize the JSON body into the target type: messages[1]: missing field `content` at line 8 column 5",
        "content_null",
    ),
    (
        "D12",
        400,
        "Invalid assistant message: content or tool_calls must be set",
        "empty_assistant_message",
    ),
    (
        "D14",
        422,
        "Failed to deserialize the JSON body into the target type: messages[0].role: unknown variant `developer`, expected one of `system`, `user`, `assistant`, `tool` at line 5 column 25",
        "developer_role",
    ),
    (
        "D14",
        400,
        "Failed to deserialize the JSON body into the target type: messages[0].role: unknown variant `developer`, expected one of `system`, `user`, `assistant`, `tool`, `latest_reminder` at line 1 column 58",
        "developer_role",
    ),
    (
        "D16",
        400,
        "Failed to deserialize the JSON body into the target type: tools[0]: unknown variant `custom` ",
        "other",
    ),
    (
        "D19",
        400,
        "Failed to deserialize the JSON body into the target type: messages[4].role: unknown variant `tool`, expected `user` or `assistant` at line 1 column 1760",
        "other",
    ),
    (
        "G1",
        400,
        "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:write_file` , position 8. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
        "thought_signature",
    ),
    ("G5", 400, "Corrupted thought signature.", "thought_signature"),
    (
        "G6",
        400,
        "Please ensure that function call turn comes immediately after a user turn or after a function response turn.",
        "function_call_turn_order",
    ),
    (
        "G7",
        400,
        "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.",
        "missing_tool_result",
    ),
    (
        "G8",
        400,
        "Please ensure that function response turn comes immediately after a function call turn.",
        "misplaced_tool_result",
    ),
    ("G9", 400, "Expected string or list of content parts, got: null", "content_null"),
    (
        "G11",
        400,
        "Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini",
        "empty_text",
    ),
    ("G13", 400, "Request contains an invalid argument.", "other"),
    (
        "G13",
        400,
        "GenerateContentRequest.contents[2].parts[0].function_response.name: Name cannot be empty.",
        "tool_message_name",
    ),
    (
        "G14",
        400,
        'Invalid JSON payload received. Unknown name "reasoning": Cannot find field.',
        "unknown_message_field",
    ),
    (
        "G18",
        400,
        "Function calling with a response mime type: 'application/json' is unsupported",
        "other",
    ),
    (
        "Mistral",
        400,
        "Tool call id was turn1_0 but must be a-z, A-Z, 0-9, with a length of 9.",
        "tool_call_id_format",
    ),
    ("Mistral", 400, "Unexpected role 'user' after role 'tool'", "user_after_tool"),
    ("Mistral", 400, "Not the same number of function calls and responses", "missing_tool_result"),
    (
        "Mistral",
        400,
        "Assistant message must have either content or tool_calls, but not none.",
        "empty_assistant_message",
    ),
    (
        "Anthropic",
        400,
        "messages.92.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
        "tool_call_id_format",
    ),
    (
        "Anthropic",
        400,
        "messages.167: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_019P95AL5DFCUyhtgQDcWJ3x. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        "missing_tool_result",
    ),
    (
        "Anthropic",
        400,
        "messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01FfCGddPyWsq3gCLqXtsJki. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        "orphan_tool_result",
    ),
    ("Anthropic", 400, "messages: text content blocks must be non-empty", "empty_text"),
    (
        "Groq",
        400,
        "'messages.2' : for 'role: assistant' the following must be satisfied[('messages.2' : property 'reasoning_content' is unsupported)]",
        "unknown_message_field",
    ),
    (
        "Groq",
        400,
        "'messages.1' : for 'role:user' the following must be satisfied[('messages.1' : property 'tool_calls' is unsupported, did you mean 'tool_call_id'?)]",
        "unknown_message_field",
    ),
    ("xAI", 400, "Only messages of role 'user' can have a name.", "unknown_message_field"),
    (
        "Kimi",
        400,
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index 4",
        "missing_reasoning_content",
    ),
    (
        "Qwen",
        400,
        '<400> InternalError.Algo.InvalidParameter: messages with role "tool" must be a response to a preceeding message with "tool_calls".',
        "orphan_tool_result",
    ),
    (
        "Qwen",
        400,
        '<400> InternalError.Algo.InvalidParameter: An assistant message with "tool_calls" must be followed by tool messages responding to each "tool_call_id". The following tool_call_ids did not have response messages: message[15].role',
        "missing_tool_result",
    ),
    (
        "Qwen",
        400,
        "developer is not one of ['system', 'assistant', 'user', 'tool', 'function'] - 'messages.[0].role'",
        "developer_role",
    ),
    ("Qwen", 400, "Empty tool_calls is not supported in message", "empty_tool_calls"),
    (
        "Volcengine",
        400,
        "The parameter `messages.role` specified in the request are not valid: invalid value: `developer`, supported values are: `system`, `assistant`, `user`, `tool`.",
        "developer_role",
    ),
    (
        "Zhipu",
        400,
        '{"error":{"code":"1214","message":"messages 参数非法。请检查文档。"}}',
        "other",
    ),
    (
        "vLLM",
        400,
        "json.decoder.JSONDecodeError: Unterminated string starting at: line 1 column 1121 (char 1120)",
        "arguments_invalid_json",
    ),
    (
        "vLLM",
        500,
        "Tool call id was call_49c89af0 but must be a-z, A-Z, 0-9, with a length of 9",
        "none",
    ),
    ("OpenRouter hosts", 400, "Extra data: line 1 column 24 (char 23)", "arguments_invalid_json"),
    (
        "Ollama",
        400,
        "json: cannot unmarshal object into Go struct field .messages.tool_calls.function.arguments of type string",
        "arguments_not_string",
    ),
    (
        "Ollama",
        400,
        "json: cannot unmarshal array into Go struct field ChatRequest.messages.content of type string",
        "content_parts_unsupported",
    ),
    (
        "MiniMax",
        400,
        "invalid params, tool call result does not follow tool call (2013)",
        "misplaced_tool_result",
    ),
    ("auth", 401, "Incorrect API key provided: sk-...", "auth"),
    ("auth", 403, "Permission denied", "auth"),
    ("rate", 429, "Rate limit reached for gpt-4o", "rate_limit"),
    ("ok", 200, "must be a response to a preceeding message", "none"),
    ("5xx", 503, "Service Unavailable", "none"),
]


def wrapped(text: str) -> dict[str, bytes]:
    """The text as providers send it: OpenAI's object, Gemini's array, OpenRouter's raw."""
    openai = {"error": {"message": text, "type": "invalid_request_error", "param": None}}
    gemini = [{"error": {"code": 400, "message": text, "status": "INVALID_ARGUMENT"}}]
    relay = {
        "error": {"message": "Provider returned error", "metadata": {"raw": json.dumps(openai)}}
    }
    return {
        "plain": text.encode(),
        "openai": json.dumps(openai).encode(),
        "gemini": json.dumps(gemini).encode(),
        "openrouter": json.dumps(relay).encode(),
    }


@pytest.mark.parametrize(
    ("status", "text", "kind"),
    [pytest.param(s, t, k, id=f"{row}-{k}-{n}") for n, (row, s, t, k) in enumerate(CASES)],
)
def test_known_error_texts(status: int, text: str, kind: str) -> None:
    expected = None if kind == "none" else kind
    for shape, body in wrapped(text).items():
        assert classify_upstream_error(status, body) == expected, shape
    assert classify_upstream_error(status, text) == expected  # the decoded text works too


def test_every_kind_is_a_rule_or_a_generic_kind() -> None:
    generic = {"auth", "rate_limit", "other"}
    assert set(KINDS) - generic <= set(ALL_RULES) | PENDING
    assert {kind for _, _, _, kind in CASES} - {"none"} <= set(KINDS)


@pytest.mark.parametrize("t", TEXTS, ids=lambda t: f"{t.row}-{TEXTS.index(t)}")
def test_every_catalogued_text_is_classified_by_its_rule(t: Text) -> None:
    """The classifier is the catalogue's: each text gets its row's rule (``other`` when no rule
    repairs it), whatever the envelope."""
    found = match(t.status, t.text)
    assert found is not None
    expected = found.rule or "other" if 400 <= t.status < 500 else None
    for shape, body in wrapped(t.text).items():
        assert classify_upstream_error(t.status, body) == expected, shape


def test_undecodable_and_huge_bodies() -> None:
    assert classify_upstream_error(400, b"\xff\xfe\x00garbage") == "other"
    assert classify_upstream_error(400, b"") == "other"
    late = b"x" * 1_000_000 + b"insufficient tool messages"
    assert classify_upstream_error(400, late) == "other"  # only the head is scanned
