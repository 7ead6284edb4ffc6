"""Records for the viewer's second set of pages: salvage and synthesis labels, action colours,
Responses API records and retried requests (repair on reject).

Chat records go through the real policy (:func:`tests.ui.conftest.sanitized`). The Responses
record and the attempts are written out by hand in the shapes the proxy writes them (issue 13:
``input`` items; issue 15: ``Record.attempts``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from proxy.repairlog.record import Record
from tests.ui.conftest import call, rejected_record, sanitized, upstream_rejected_record

SALVAGE_PREFIX = "[toolcall-guard] Result of tool call call_zz"
DEEPSEEK_D3 = (
    '{"error": {"message": "Missing `reasoning_content` field in the assistant message at '
    "message index 1. For more information, please refer to "
    'https://api-docs.deepseek.com/guides/thinking_mode#tool-calls", "type": '
    '"invalid_request_error", "param": null, "code": "invalid_request_error"}}'
)


def salvage_run_record(created_at: datetime) -> Record:
    """Two results of lost calls in the middle of a run: salvaged into one user message after
    the run, which the alignment alone sees as two removals and an addition."""
    messages = [
        {"role": "user", "content": "Compare the two cities"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("a", "paris", "{}"), call("b", "berlin", "{}")],
        },
        {"role": "tool", "tool_call_id": "a", "content": "Paris result"},
        {"role": "tool", "tool_call_id": "zz", "content": "lost result text"},
        {"role": "tool", "tool_call_id": "yy", "content": "another lost result"},
        {"role": "tool", "tool_call_id": "b", "content": "Berlin result"},
        {"role": "user", "content": "next"},
    ]
    return sanitized("openai", messages, request_id="req_salvage", created_at=created_at)


def synthesized_record(created_at: datetime) -> Record:
    """A call without its result (max tools per round): the proxy adds one."""
    messages = [
        {"role": "user", "content": "Weather and time?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("w1", "get_weather", "{}"), call("t1", "get_time", "{}")],
        },
        {"role": "tool", "tool_call_id": "w1", "content": "18°C"},
        {"role": "user", "content": "thanks"},
    ]
    return sanitized("openai", messages, request_id="req_synth", created_at=created_at)


def warned_record(created_at: datetime) -> Record:
    """Observed, not repaired: two user messages in a row."""
    messages = [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "ok"},
    ]
    return sanitized("observe", messages, upstream="openai", created_at=created_at)


def _text(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


RESPONSES_INPUT: list[dict[str, Any]] = [
    _text("user", "What's the weather and the time in Paris?"),
    {"type": "reasoning", "id": "rs_01", "summary": [], "encrypted_content": "gAAAAB-opaque"},
    {
        "type": "function_call",
        "id": "fc_01",
        "call_id": "call_w1",
        "name": "get_weather",
        "arguments": '{"city":"Paris"}',
    },
    {
        "type": "function_call",
        "id": "fc_02",
        "call_id": "call_t1",
        "name": "get_time",
        "arguments": "{}",
    },
    {"type": "function_call_output", "call_id": "call_w1", "output": "18°C, cloudy"},
    {"type": "function_call_output", "call_id": "call_zz", "output": "result of a lost call"},
    {"role": "user", "content": "And tomorrow?"},
]


def responses_record(created_at: datetime) -> Record:
    """A Responses request: a call without output (synthesized) and an output without call
    (salvaged into a user message)."""
    items = RESPONSES_INPUT
    salvaged = _text("user", f"{SALVAGE_PREFIX} (unknown tool):\nresult of a lost call")
    synthesized = {"type": "function_call_output", "call_id": "call_t1", "output": "aborted"}
    forwarded = [*items[:5], synthesized, salvaged, items[6]]
    findings = [
        {
            "rule": "responses_missing_output",
            "action": "synthesize",
            "path": "input[3]",
            "detail": "function_call 'call_t1' has no output",
        },
        {
            "rule": "responses_orphan_output",
            "action": "salvage",
            "path": "input[5]",
            "detail": "function_call_output for 'call_zz', which no call made",
        },
    ]
    return Record(
        upstream="openai",
        model="gpt-5",
        path="/v1/responses",
        stream=False,
        outcome="repaired",
        findings=findings,
        received={"model": "gpt-5", "store": False, "input": items},
        forwarded={"model": "gpt-5", "store": False, "input": forwarded},
        upstream_status=200,
        request_id="req_responses",
        created_at=created_at,
    )


def retried_record(created_at: datetime) -> Record:
    """DeepSeek thinking mode refused a history the policy let through (D3); the retry added
    ``reasoning_content``. ``retried_rule`` names the rule whose repair made the next attempt."""
    messages = [
        {"role": "user", "content": "List the files"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", "ls", "{}")]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt b.txt"},
    ]
    body = {"model": "deepseek-reasoner", "messages": messages}
    retried = [messages[0], {**messages[1], "reasoning_content": ""}, messages[2]]
    second = {**body, "messages": retried}
    attempts = [
        {
            "forwarded": body,
            "upstream_status": 400,
            "upstream_error": DEEPSEEK_D3,
            "upstream_error_kind": "missing_reasoning_content",
            "retried_rule": "missing_reasoning_content",
        },
        {
            "forwarded": second,
            "upstream_status": 200,
            "upstream_error": None,
            "upstream_error_kind": None,
            "retried_rule": None,
        },
    ]
    return Record(
        upstream="deepseek",
        model="deepseek-reasoner",
        path="/v1/chat/completions",
        stream=False,
        outcome="repaired",
        findings=[],
        received=body,
        forwarded=second,
        upstream_status=200,
        status=200,
        attempts=attempts,
        created_at=created_at,
    )


def unreachable_record(created_at: datetime) -> Record:
    """Repaired, then the upstream could not be reached: the client got the proxy's 502."""
    record = salvage_run_record(created_at)
    record.upstream = "deepseek"
    record.upstream_status = None
    record.status = 502
    record.proxy_error = "upstream_unavailable"
    return record


class Second:
    """The records of the second server, by role, newest first."""

    def __init__(self) -> None:
        now = datetime.now(UTC)
        at = [now - timedelta(minutes=i) for i in range(8)]
        self.salvage = salvage_run_record(at[0])
        self.synthesized = synthesized_record(at[1])
        self.warned = warned_record(at[2])
        self.rejected = rejected_record(at[3])
        self.upstream_rejected = upstream_rejected_record(at[4])
        self.responses = responses_record(at[5])
        self.retried = retried_record(at[6])
        self.unreachable = unreachable_record(at[7])
        self.retried.ending = "upstream_cut"  # a 200 whose body broke off
        self.all = [
            self.salvage,
            self.synthesized,
            self.warned,
            self.rejected,
            self.upstream_rejected,
            self.responses,
            self.retried,
            self.unreachable,
        ]
