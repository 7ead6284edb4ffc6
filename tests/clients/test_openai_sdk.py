"""The ``openai`` SDK: message objects appended as the SDK returns them, stream accumulation.

The agent loop is the one the SDK's docs show: append ``response.choices[0].message`` (the
SDK's pydantic object, serialized by the SDK itself), then one ``tool`` message per call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.conftest import (
    ASK,
    PARALLEL_CALLS,
    READ_FILE,
    SYSTEM,
    TIMEOUT,
    Guard,
    parametrize_models,
    provider_answer,
    require,
)

#: Where replaying the SDK's own objects verbatim breaks the provider's rules, so the proxy
#: must repair (and everywhere else must not). The SDK keeps ``content: null`` on a tool-call
#: message, which Gemini rejects (provider-rules.md G9, "got: null").
APPENDED_OBJECT = {"gemini-2.5-flash": "repaired", "gemini-3-pro-preview": "repaired"}
#: The stream accumulator's message carries ``index`` on each call and SDK-only keys
#: (``parsed``, ``parsed_arguments``): OpenAI rejects unknown parameters (O12), DeepSeek and
#: Gemini accept them. Its ``content`` is ``""`` (the role chunk's), which Gemini accepts (G10).
STREAM_ACCUMULATED = {"gpt-4o": "repaired"}


@pytest.fixture
def client(guard: Guard) -> Iterator[Any]:
    openai = require("openai")
    with openai.OpenAI(
        base_url=guard.v1, api_key="sk-client", max_retries=0, timeout=TIMEOUT
    ) as client:
        yield client


def _ask(client: Any, model: str, messages: list[Any]) -> Any:
    return client.chat.completions.create(model=model, messages=messages, tools=[READ_FILE])


def _answer_calls(messages: list[Any], message: Any) -> None:
    """Append the assistant message object and one tool result per call."""
    messages.append(message)
    for call in message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"<{call.id}>"})


def _parallel_message(model: str) -> Any:
    """The SDK's own parse of a provider answer with two parallel calls."""
    chat = require("openai.types.chat")
    completion = chat.ChatCompletion.model_validate(provider_answer(model, PARALLEL_CALLS))
    return completion.choices[0].message


@parametrize_models()
def test_single_round_with_appended_message_objects(guard: Guard, client: Any, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    first = _ask(client, model, messages)
    assert first.choices[0].message.tool_calls, "the emulator answers the tool call"
    _answer_calls(messages, first.choices[0].message)
    second = _ask(client, model, messages)
    assert second.choices[0].message.content
    guard.assert_outcomes(model, ["clean", APPENDED_OBJECT.get(model, "clean")])


@parametrize_models()
def test_parallel_round(guard: Guard, client: Any, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    _answer_calls(messages, _parallel_message(model))
    answer = _ask(client, model, messages)
    assert "<call_a1> | <call_b2>" in answer.choices[0].message.content
    guard.assert_outcomes(model, [APPENDED_OBJECT.get(model, "clean")])


@parametrize_models()
def test_stream_accumulated_message(guard: Guard, client: Any, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    with client.chat.completions.stream(model=model, messages=messages, tools=[READ_FILE]) as s:
        for _ in s:
            pass
        final = s.get_final_completion()
    _answer_calls(messages, final.choices[0].message)
    with client.chat.completions.stream(model=model, messages=messages, tools=[READ_FILE]) as s:
        text = s.get_final_completion().choices[0].message.content
    assert text
    guard.assert_outcomes(model, ["clean", STREAM_ACCUMULATED.get(model, "clean")])


@parametrize_models()
def test_lost_tool_calls_are_repaired(guard: Guard, client: Any, model: str) -> None:
    """The saved history kept the assistant's text but not its ``tool_calls`` (seed 000)."""
    messages: list[Any] = [SYSTEM, ASK]
    first = _ask(client, model, messages)
    _answer_calls(messages, first.choices[0].message)
    messages[2] = {"role": "assistant", "content": first.choices[0].message.content or ""}
    messages.append({"role": "user", "content": "And now README.md."})
    guard.reset()
    _ask(client, model, messages)
    guard.assert_repaired(model)


@parametrize_models()
def test_history_trimmed_mid_chain_is_repaired(guard: Guard, client: Any, model: str) -> None:
    """Context compression cut the history between a call and its result."""
    messages: list[Any] = [SYSTEM, ASK]
    _answer_calls(messages, _parallel_message(model))
    trimmed = [SYSTEM, *messages[3:], {"role": "user", "content": "Summarize."}]
    _ask(client, model, trimmed)
    guard.assert_repaired(model)


@parametrize_models()
def test_missing_result_is_repaired(guard: Guard, client: Any, model: str) -> None:
    """One of two parallel calls was executed; the other's result is missing."""
    messages: list[Any] = [SYSTEM, ASK]
    _answer_calls(messages, _parallel_message(model))
    del messages[-1]
    messages.append({"role": "user", "content": "Go on."})
    _ask(client, model, messages)
    guard.assert_repaired(model)
