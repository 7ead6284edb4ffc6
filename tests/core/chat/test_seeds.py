"""The five seed scenarios (/work/shared/seeds, provider-rules.md §5) as sanitizer regressions.

Each is the broken history a real agent sent, run through its provider's preset: the findings
name what broke, and the output is a well-paired history that the provider's emulator (its
strictest model) accepts.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from proxy.core.policy import build_policy
from proxy.emulator import validate
from tests.factories import body, sanitize_chat

Message = dict[str, Any]
PAIRING_AND_SEQUENCE = {
    "duplicate_tool_call_id",
    "misplaced_tool_result",
    "duplicate_tool_result",
    "orphan_tool_result",
    "missing_tool_result",
    "empty_assistant_message",
    "function_call_turn_order",
    "consecutive_same_role",
}
SIGNATURE = {"google": {"thought_signature": "skip_thought_signature_validator"}}


def assert_well_paired(messages: list[Message]) -> None:
    """Every tool message right after an assistant message making a call of its id, and every
    call answered exactly once before the next non-tool message (an id may come back in a
    later message once its call was answered)."""
    open_calls: set[str] | None = None  # ids of the current block not answered yet
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            assert open_calls is not None, f"messages[{i}]: tool message outside a call block"
            assert message.get("tool_call_id") in open_calls, f"messages[{i}]: answers no call"
            open_calls.discard(message["tool_call_id"])
            continue
        assert not open_calls, f"messages[{i}]: calls {open_calls} left unanswered"
        ids = [call["id"] for call in message.get("tool_calls") or ()]
        assert len(set(ids)) == len(ids), f"messages[{i}]: a tool call id used twice"
        open_calls = set(ids) if ids else None
    assert not open_calls, f"calls {open_calls} left unanswered at the end"


def sanitize(messages: list[Message], preset: str) -> tuple[list[tuple[str, str]], list[Message]]:
    """Findings ``(rule, path)`` of this module's rules, and the repaired messages (checked)."""
    with pytest.raises(AssertionError):
        assert_well_paired(messages)  # the seed really is broken
    policy = build_policy(preset)
    before = copy.deepcopy(messages)
    request = body(messages, preset)  # the provider's strictest model
    outcome = sanitize_chat(messages, policy, request=request)
    assert messages == before, "the engine mutated its input"
    assert not outcome.rejected, [f.as_dict() for f in outcome.findings]
    assert_well_paired(outcome.messages)
    rejection = validate(preset, body(outcome.messages, preset))  # the provider's strict model
    assert rejection is None, (rejection.rule, rejection.message)
    again = sanitize_chat(outcome.messages, policy, request=request)
    assert again.findings == (), "not idempotent"
    ours = [(f.rule, f.path) for f in outcome.findings if f.rule in PAIRING_AND_SEQUENCE]
    return ours, outcome.messages


def call(call_id: str, name: str, arguments: Any = '{"path": "README.md"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_seed_000_lost_tool_calls_on_save_sent_to_deepseek() -> None:
    # The agent saved the assistant turn with role and content only, then its tool result.
    messages = [
        {"role": "system", "content": "You are a planner."},
        {"role": "user", "content": "读取 README.md"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true, "text": "# Demo"}'},
    ]
    findings, out = sanitize(messages, "deepseek")
    assert findings == [
        ("orphan_tool_result", "messages[3]"),
        ("empty_assistant_message", "messages[2]"),
    ]
    assert [m["role"] for m in out] == ["system", "user", "user"]
    assert "call_1" in out[2]["content"]
    assert '{"ok": true, "text": "# Demo"}' in out[2]["content"]


def test_seed_001_compression_cuts_into_a_tool_chain() -> None:
    # The kept tail starts inside a chain: its results lead, their assistant call was summarised.
    messages = [
        {"role": "system", "content": "Summary of earlier turns: the user asked to audit repo."},
        {"role": "tool", "tool_call_id": "call_ls", "content": "src/ tests/"},
        {"role": "tool", "tool_call_id": "call_cat", "content": "print('hi')"},
        {"role": "assistant", "content": "The repo has two folders and one script."},
        {"role": "user", "content": "Now count the lines."},
    ]
    findings, out = sanitize(messages, "openai")
    assert findings == [
        ("orphan_tool_result", "messages[1]"),
        ("orphan_tool_result", "messages[2]"),
    ]
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert "src/ tests/" in out[1]["content"]
    assert "print('hi')" in out[1]["content"]


def test_seed_002_gemini_db_tool_results_without_calls() -> None:
    # History loaded from the database carries old tool results whose calls were never stored;
    # the current turn has dict arguments and a tool message with its name (both as stored).
    messages = [
        {"role": "system", "content": "persona + tools"},
        {"role": "user", "content": "What is new about proxies?"},
        {"role": "tool", "tool_call_id": "call_db", "name": "web_search", "content": "3 hits"},
        {"role": "assistant", "content": "Three articles came up."},
        {"role": "user", "content": "Open the first one."},
        {
            "role": "assistant",
            "content": "Opening it.",
            "tool_calls": [
                {
                    **call("call_now", "fetch_page", {"url": "https://a.example"}),
                    "extra_content": SIGNATURE,
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_now", "name": "fetch_page", "content": "<html>"},
    ]
    findings, out = sanitize(messages, "gemini")
    assert findings == [("orphan_tool_result", "messages[2]")]
    assert out[2] == {
        "role": "user",
        "content": "[toolcall-guard] Result of tool call call_db (web_search), whose call is "
        "missing from the history:\n3 hits",
    }
    assert out[5]["tool_calls"][0]["function"]["arguments"] == '{"url":"https://a.example"}'


def test_seed_003_three_of_four_parallel_calls_executed() -> None:
    # max_tools_per_round = 3: the fourth call stayed in the assistant message, unanswered.
    calls = [call(f"call_{k}", "add", '{"a": 1}') for k in range(1, 5)]
    messages = [
        {"role": "user", "content": "帮我计算1+2+3+4"},
        {"role": "assistant", "content": "Adding.", "reasoning_content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        {"role": "tool", "tool_call_id": "call_2", "content": "7"},
        {"role": "tool", "tool_call_id": "call_3", "content": "10"},
    ]
    findings, out = sanitize(messages, "deepseek")
    assert findings == [("missing_tool_result", "messages[1].tool_calls[3]")]
    assert out[:5] == messages
    assert out[5] == {
        "role": "tool",
        "tool_call_id": "call_4",
        "content": "No result was recorded for this tool call.",
    }


def test_seed_004_typed_message_classes_drop_call_fields() -> None:
    # model_dump() kept only role and content: no tool_calls, no tool_call_id.
    messages = [
        {"role": "system", "content": "You are AgentBot."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "tool", "content": "sunny, 21°C"},
        {"role": "assistant", "content": "It is sunny and 21°C."},
        {"role": "user", "content": "And tomorrow?"},
    ]
    findings, out = sanitize(messages, "openai")
    assert findings == [("orphan_tool_result", "messages[3]")]
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "sunny, 21°C" in out[3]["content"]
