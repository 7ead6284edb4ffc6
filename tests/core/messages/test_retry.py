"""Repair on reject for ``/v1/messages``: the M texts, in the envelopes Anthropic and the relays
use, plan the matching rule's repair at the place they name (merged indexes widened)."""

# ruff: noqa: E501 -- provider texts are quoted whole

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.core.policy import build_policy
from proxy.core.retry import plan_retry
from proxy.core.signatures import match
from proxy.emulator.messages_validate import validate_messages

M1 = (
    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
    "toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block in the next "
    "message."
)
M2 = (
    "messages.0.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_gone. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
SONNET = {"model": "claude-sonnet-4-5", "max_tokens": 1024}


def anthropic(message: str) -> str:
    error = {"type": "invalid_request_error", "message": message}
    return json.dumps({"type": "error", "error": error, "request_id": "req_011"})


#: Relays wrapping Anthropic's body (anthropic-messages.md §2).
RELAYS = {
    "anthropic": anthropic,
    "metadata.raw": lambda m: json.dumps(
        {"error": {"message": "Provider returned error", "metadata": {"raw": anthropic(m)}}}
    ),
    "upstream_error": lambda m: json.dumps(
        {
            "error": {"message": "upstream failed", "type": "api_error"},
            "upstream_error": anthropic(m),
        }
    ),
    "vertex": lambda m: json.dumps(
        {"error": {"code": 400, "message": anthropic(m), "status": "INVALID_ARGUMENT"}}
    ),
}


@pytest.mark.parametrize("relay", list(RELAYS))
def test_relay_wrappers_are_opened(relay: str) -> None:
    found = match(400, RELAYS[relay](M2), "messages")
    assert found is not None
    assert found.rule == "messages_orphan_tool_result"
    assert (found.index, found.field) == (0, "messages[0].content[1]")


def test_merged_index_names_the_run_anthropic_counted() -> None:
    """The SDK's recorded request: a text and the result as two user messages; Anthropic
    merges them and names ``messages.0.content.1`` (the second message's block)."""
    body = {
        **SONNET,
        "messages": [
            {"role": "user", "content": "Summary of earlier work."},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_gone", "content": "out"}],
            },
        ],
    }
    plan = plan_retry("messages", body, 400, RELAYS["anthropic"](M2), build_policy("openai"))
    assert plan is not None
    assert plan.rule == "messages_orphan_tool_result"
    assert plan.findings[0].path == "messages[1].content[0]"
    (merged,) = plan.body["messages"]  # the run Anthropic reads as one, salvaged in order
    texts = [block["text"] for block in merged["content"]]
    assert texts[0] == "Summary of earlier work."
    assert texts[-1] == "out"
    assert validate_messages("anthropic", plan.body) is None


def _loop(ids: list[str], answered: list[str]) -> dict[str, Any]:
    calls = [{"type": "tool_use", "id": i, "name": "read", "input": {}} for i in ids]
    results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in answered]
    return {
        **SONNET,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": calls},
            {"role": "user", "content": [*results, {"type": "text", "text": "next"}]},
        ],
    }


def test_missing_result_retried_with_a_lost_result() -> None:
    body = _loop(["toolu_01A", "toolu_01B"], ["toolu_01B"])
    plan = plan_retry("messages", body, 400, anthropic(M1.format(i=1)), build_policy("anthropic"))
    assert plan is not None
    synthetic = plan.body["messages"][2]["content"][1]
    assert synthetic["tool_use_id"] == "toolu_01A"
    assert synthetic["is_error"] is True
    assert validate_messages("anthropic", plan.body) is None
    assert (
        plan_retry("messages", plan.body, 400, anthropic(M1.format(i=1)), build_policy("anthropic"))
        is None
    )


def test_a_place_where_the_rule_finds_nothing_is_no_retry() -> None:
    body = _loop(["toolu_01A"], ["toolu_01A"])
    assert (
        plan_retry("messages", body, 400, anthropic(M1.format(i=1)), build_policy("anthropic"))
        is None
    )


def test_thinking_refusal_disables_thinking_as_a_field() -> None:
    body = {
        **_loop(["toolu_01A"], ["toolu_01A"]),
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }
    body["messages"][2]["content"].pop()  # the open loop: results only
    text = (
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
    )
    plan = plan_retry("messages", body, 400, anthropic(text), build_policy("openai"))
    assert plan is not None
    assert plan.body["thinking"] == {"type": "disabled"}
    assert plan.body["messages"] == body["messages"]


def test_system_role_refused_where_the_record_expects_it_taken() -> None:
    """Opus 5 takes system messages per the record; a refusal says this one does not."""
    body = {
        "model": "claude-opus-5",
        "max_tokens": 100,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "Be brief."},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "more"},
        ],
    }
    text = anthropic("role 'system' is not supported on this model")
    plan = plan_retry("messages", body, 400, text, build_policy("anthropic"))
    assert plan is not None
    assert [m["role"] for m in plan.body["messages"]] == ["user", "assistant", "user"]
    assert "<system-reminder>Be brief.</system-reminder>" in json.dumps(plan.body["messages"][0])


def test_deepseek_thinking_text_in_openai_shape() -> None:
    body = {**_loop(["call_1"], ["call_1"]), "model": "deepseek-v4-pro"}
    text = json.dumps(
        {
            "error": {
                "message": "The `content[].thinking` in the thinking mode must be passed back to the API.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        }
    )
    plan = plan_retry("messages", body, 400, text, build_policy("deepseek"))
    assert plan is not None
    assert plan.body["messages"][1]["content"][0] == {"type": "thinking", "thinking": ""}
    assert validate_messages("deepseek", plan.body) is None
