"""The real openai SDK's ``client.responses.create`` against the emulator over a real socket."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from proxy.core.policy import build_policy
from proxy.core.wire import RESPONSES, sanitize_body
from proxy.emulator import create_emulator_app
from tests.servers import running

TOOLS: list[Any] = [
    {"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {}}}
]


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with running(create_emulator_app("openai")) as url:
        yield url + "/v1"


@pytest.fixture
def client(base_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as sdk:
        yield sdk


def test_plain_response(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4.1", input="hello there")
    assert response.output_text == "Emulated openai answer to: hello there"
    assert response.status == "completed"
    assert response.usage is not None
    assert response.usage.total_tokens > 0


def test_streamed_response(client: openai.OpenAI) -> None:
    stream = client.responses.create(model="gpt-4.1", input="stream me please", stream=True)
    kinds, text, final = [], "", None
    for event in stream:
        kinds.append(event.type)
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            final = event.response
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert "response.output_item.added" in kinds
    assert final is not None
    assert final.output_text == text
    assert text == "Emulated openai answer to: stream me please"


def test_tool_loop_with_a_reasoning_model(client: openai.OpenAI) -> None:
    items: list[Any] = [{"role": "user", "content": "list the files"}]
    first = client.responses.create(
        model="gpt-5-codex", input=items, tools=TOOLS, include=["reasoning.encrypted_content"]
    )
    kinds = [item.type for item in first.output]
    assert kinds == ["reasoning", "function_call"]
    items += [item.model_dump(exclude_none=True) for item in first.output]
    call = first.output[1]
    assert call.type == "function_call"
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "a.py"})
    second = client.responses.create(model="gpt-5-codex", input=items, tools=TOOLS)
    assert second.output_text.startswith("Emulated openai answer to the tool outputs: a.py")


def _codex_history(client: openai.OpenAI) -> list[Any]:
    """A Codex-shaped history: a reasoning item with encrypted content, parallel calls, a
    custom tool call and a local shell call, of which only the first call got its output."""
    first = client.responses.create(
        model="gpt-5-codex",
        input=[{"role": "user", "content": "fix the bug"}],
        tools=TOOLS,
        include=["reasoning.encrypted_content"],
    )
    reasoning, call = (item.model_dump(exclude_none=True) for item in first.output)
    assert reasoning["encrypted_content"].startswith("gAAAAA")
    return [
        {
            "type": "message",
            "role": "developer",
            "content": [{"type": "input_text", "text": "Codex"}],
        },
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "fix the bug"}],
        },
        reasoning,
        call,
        {
            "type": "custom_tool_call",
            "call_id": "call_patch",
            "name": "apply_patch",
            "input": "*** Begin Patch",
        },
        {
            "type": "local_shell_call",
            "call_id": "call_ls",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        {"type": "function_call_output", "call_id": call["call_id"], "output": "print(1)"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]},
    ]


def test_a_broken_codex_history_is_refused_then_accepted_once_sanitized(
    client: openai.OpenAI,
) -> None:
    items = _codex_history(client)
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-5-codex", input=items, store=False)
    assert "No tool output found for function call call_patch." in str(refused.value)
    body = {"model": "gpt-5-codex", "input": items, "store": False}
    outcome = sanitize_body(RESPONSES, body, build_policy("openai"))
    assert [f.rule for f in outcome.findings] == ["responses_missing_output"] * 2
    answer = client.responses.create(model="gpt-5-codex", input=outcome.messages, store=False)
    assert answer.status == "completed"
    assert outcome.messages[:6] == items[:6]


def test_an_orphan_output_is_refused_with_the_r2_text(client: openai.OpenAI) -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "call_gone", "output": "x"},
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="gpt-4.1", input=items)
    assert refused.value.body == {
        "message": "No tool call found for function call output with call_id call_gone.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }
