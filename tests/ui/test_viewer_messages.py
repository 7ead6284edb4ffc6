"""Anthropic Messages records in a real browser (issue 21 §6): content blocks side by side,
labelled with their types and the call they make or answer, the rule that changed each, and the
copied command naming ``--api messages``. The record goes through the real Messages policy."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from proxy.core.forward import forwarded_body
from proxy.core.policy import build_policy
from proxy.core.wire import MESSAGES, sanitize_body
from proxy.repairlog.record import Record
from tests.servers import running
from tests.ui.conftest import viewer_app
from tests.ui.test_viewer import expect, open_record

RULE = "messages_missing_tool_result"


def messages_record() -> Record:
    """Claude Code's history after an interrupt: a tool_use whose result was never sent."""
    received = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Read config.py"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "Stop, do something else."}]},
        ],
    }
    outcome = sanitize_body(MESSAGES, received, build_policy("anthropic"))
    assert RULE in outcome.rule_counts(), outcome.findings
    return Record(
        upstream="anthropic",
        model="claude-sonnet-4-5",
        path="/v1/messages",
        stream=True,
        outcome="repaired",
        findings=[f.as_dict() for f in outcome.findings],
        received=received,
        forwarded=forwarded_body(MESSAGES, received, outcome),
        upstream_status=200,
        request_id="req_messages",
        created_at=datetime.now(UTC),
    )


@pytest.fixture(scope="module")
def record() -> Record:
    return messages_record()


@pytest.fixture(scope="module")
def viewer3(record: Record) -> Iterator[str]:
    with running(viewer_app([record])) as url:
        yield url


def test_content_blocks_are_drawn_with_their_types_calls_and_rules(
    page: Any, viewer3: str, record: Record
) -> None:
    open_record(page, viewer3, record.id)
    compare = page.locator(".compare")
    expect(compare.locator("h2")).to_have_text("Messages")
    expect(compare).to_contain_text("#1 assistant [text, tool_use]")
    expect(compare).to_contain_text("[tool_result")
    expect(compare).to_contain_text("toolu_01A")
    expect(compare.locator(".rule").first).to_have_text(RULE)
    expect(page.locator("pre.command")).to_contain_text("--api messages --upstream anthropic")
