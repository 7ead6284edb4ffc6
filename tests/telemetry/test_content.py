"""Captured content in the GenAI conventions' schema (issue 36): each wire API's history, system
text and JSON answer as ``gen_ai.input.messages``, ``gen_ai.system_instructions`` and
``gen_ai.output.messages`` (role + parts; output messages with their finish reason), checked
against the conventions' JSON schema (its required fields, as
``docs/gen-ai/gen-ai-{input,output}-messages.json`` and ``gen-ai-system-instructions.json``
state them) and part for part."""

from __future__ import annotations

from typing import Any

import jsonschema
import orjson
import pytest

from proxy.core.wire import CHAT, GEMINI, MESSAGES, RESPONSES, WIRES

_PART = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string"}},
    "allOf": [
        {
            "if": {"properties": {"type": {"const": "text"}}},
            "then": {"required": ["content"], "properties": {"content": {"type": "string"}}},
        },
        {
            "if": {"properties": {"type": {"const": "tool_call"}}},
            "then": {"required": ["name"], "properties": {"name": {"type": "string"}}},
        },
        {
            "if": {"properties": {"type": {"const": "tool_call_response"}}},
            "then": {"required": ["response"]},
        },
    ],
}
_MESSAGE = {
    "type": "object",
    "required": ["role", "parts"],
    "properties": {"role": {"type": "string"}, "parts": {"type": "array", "items": _PART}},
}
INPUT = {"type": "array", "items": _MESSAGE}
OUTPUT = {
    "type": "array",
    "items": {**_MESSAGE, "required": ["role", "parts", "finish_reason"]},
}
SYSTEM = {"type": "array", "items": _PART}

CALL = {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a.txt"}}
RESULT = {"type": "tool_call_response", "id": "c1", "response": "hello"}
CASES: dict[str, Any] = {
    "chat": (
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Read a.txt"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a.txt"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "hello"},
        ],
        [
            {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
            {"role": "user", "parts": [{"type": "text", "content": "Read a.txt"}]},
            {"role": "assistant", "parts": [CALL]},
            {"role": "tool", "parts": [RESULT]},
        ],
        {
            "choices": [
                {
                    "message": {"role": "assistant", "content": "It says hello."},
                    "finish_reason": "stop",
                }
            ]
        },
        [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "It says hello."}],
                "finish_reason": "stop",
            }
        ],
    ),
    "responses": (
        [
            "Read a.txt",
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "read",
                "arguments": '{"path": "a.txt"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "hello"},
        ],
        [
            {"role": "user", "parts": [{"type": "text", "content": "Read a.txt"}]},
            {"role": "assistant", "parts": [CALL]},
            {"role": "tool", "parts": [RESULT]},
        ],
        {
            "status": "completed",
            "output": [
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Easy."}]},
                {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
            ],
        },
        [
            {
                "role": "assistant",
                "parts": [
                    {"type": "reasoning", "content": "Easy."},
                    {"type": "tool_call", "id": "c2", "name": "read", "arguments": {}},
                ],
                "finish_reason": "tool_call",
            }
        ],
    ),
    "messages": (
        [
            {"role": "user", "content": "Read a.txt"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.txt"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "hello"}],
            },
        ],
        [
            {"role": "user", "parts": [{"type": "text", "content": "Read a.txt"}]},
            {"role": "assistant", "parts": [CALL]},
            {"role": "user", "parts": [RESULT]},
        ],
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Hi"}],
            "stop_reason": "max_tokens",
        },
        [
            {
                "role": "assistant",
                "parts": [{"type": "text", "content": "Hi"}],
                "finish_reason": "length",
            }
        ],
    ),
    "gemini": (
        [
            {"role": "user", "parts": [{"text": "Read a.txt"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"id": "c1", "name": "read", "args": {"path": "a.txt"}}}
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"id": "c1", "name": "read", "response": "hello"}}],
            },
        ],
        [
            {"role": "user", "parts": [{"type": "text", "content": "Read a.txt"}]},
            {"role": "assistant", "parts": [CALL]},
            {"role": "user", "parts": [RESULT]},
        ],
        {
            "response": {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {"text": "Hm", "thought": True},
                                {"inlineData": {"data": "AA=="}},
                            ],
                        },
                        "finishReason": "SAFETY",
                    }
                ]
            }
        },
        [
            {
                "role": "assistant",
                "parts": [{"type": "reasoning", "content": "Hm"}, {"type": "inlineData"}],
                "finish_reason": "content_filter",
            }
        ],
    ),
}


@pytest.mark.parametrize("api", list(CASES))
def test_each_apis_content_follows_the_conventions_schema(api: str) -> None:
    history, expected_input, answer, expected_output = CASES[api]
    converter = WIRES[api].genai
    assert converter is not None

    found_input = orjson.loads(orjson.dumps(converter.input(history)))
    found_output = orjson.loads(orjson.dumps(converter.output(answer)))

    jsonschema.validate(found_input, INPUT)
    jsonschema.validate(found_output, OUTPUT)
    assert found_input == expected_input
    assert found_output == expected_output


def test_system_instructions_are_parts_whatever_the_api_wrote() -> None:
    values = [
        (RESPONSES, "Be brief."),  # Responses' instructions
        (CHAT, "Be brief."),
        (MESSAGES, "Be brief."),  # a Messages string
        (MESSAGES, [{"type": "text", "text": "Use tools."}]),  # Messages blocks
        (GEMINI, {"parts": [{"text": "Answer in French."}]}),  # Gemini's systemInstruction
    ]

    parts = [p for wire, value in values if wire.genai for p in wire.genai.system(value)]

    jsonschema.validate(parts, SYSTEM)
    assert [p["content"] for p in parts] == [
        "Be brief.",
        "Be brief.",
        "Be brief.",
        "Use tools.",
        "Answer in French.",
    ]
