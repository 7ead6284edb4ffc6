"""LiteLLM: ``litellm.completion`` with ``api_base`` at the proxy, its ``Message`` objects
appended as returned, and ``stream_chunk_builder`` for streamed answers.

Models are named as LiteLLM's docs name them: ``deepseek/…`` (its DeepSeek provider), and
``openai/…`` for OpenAI and for Gemini's OpenAI-compatible endpoint. The model cost map is read
from the package (``LITELLM_LOCAL_MODEL_COST_MAP``): no fetch at import.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.conftest import (
    ASK,
    MODELS,
    PARALLEL_CALLS,
    READ_FILE,
    SYSTEM,
    TIMEOUT,
    Guard,
    parametrize_models,
    provider_answer,
    require,
)

#: Where replaying LiteLLM's ``Message`` objects breaks the provider's rules, so the proxy
#: must repair (and nowhere else). A tool-call message goes without its ``content`` key, which
#: DeepSeek's deserializer refuses (provider-rules.md D11); Gemini and OpenAI accept that.
BUILT = {"deepseek-chat": "repaired", "deepseek-reasoner": "repaired"}
#: A message as ``completion()`` returns it also carries LiteLLM's ``provider_specific_fields``
#: key, an unknown parameter to OpenAI (O12).
RETURNED = {**BUILT, "gpt-4o": "repaired"}
#: ``stream_chunk_builder`` drops Gemini 3's ``extra_content`` from the calls, so the thought
#: signature is missing (G1).
STREAM_BUILT = {**BUILT, "gemini-3-pro-preview": "repaired"}
#: LiteLLM's own logging re-serializes the messages and warns when a tool call is a plain dict;
#: the request is unaffected (these tests compare its bytes), so the noise is not an error here.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")


@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The package, with an event loop of the test's own for the thread.

    LiteLLM's sync calls take the thread's default loop (``asyncio.get_event_loop()``), which
    creates one and leaves it open; a later ``asyncio.run`` (pydantic-ai, the Agents SDK) drops
    it unclosed, a ResourceWarning in some other test. This loop is closed after the test.
    """
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    module = require("litellm")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield module
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def _ask(litellm: Any, guard: Guard, model: str, messages: list[Any], **kw: Any) -> Any:
    prefix = "deepseek" if MODELS[model] == "deepseek" else "openai"
    return litellm.completion(
        model=f"{prefix}/{model}",
        messages=messages,
        tools=[READ_FILE],
        api_base=guard.v1,
        api_key="sk-client",
        num_retries=0,
        timeout=TIMEOUT,
        **kw,
    )


def _answer(messages: list[Any], message: Any) -> None:
    messages.append(message)
    for call in message.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": f"<{call.id}>"})


def _parallel(litellm: Any, model: str) -> Any:
    """LiteLLM's own parse of a provider answer with two parallel calls."""
    answer = litellm.ModelResponse(**provider_answer(model, PARALLEL_CALLS))
    return answer.choices[0].message


@parametrize_models()
def test_single_round(litellm: Any, guard: Guard, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    first = _ask(litellm, guard, model, messages)
    _answer(messages, first.choices[0].message)
    assert _ask(litellm, guard, model, messages).choices[0].message.content
    guard.assert_outcomes(model, ["clean", RETURNED.get(model, "clean")])


@parametrize_models()
def test_stream_built_message(litellm: Any, guard: Guard, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    chunks = list(_ask(litellm, guard, model, messages, stream=True))
    built = litellm.stream_chunk_builder(chunks, messages=messages)
    _answer(messages, built.choices[0].message)
    assert _ask(litellm, guard, model, messages).choices[0].message.content
    guard.assert_outcomes(model, ["clean", STREAM_BUILT.get(model, "clean")])


@parametrize_models()
def test_parallel_round(litellm: Any, guard: Guard, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    _answer(messages, _parallel(litellm, model))
    assert (
        "<call_a1> | <call_b2>" in _ask(litellm, guard, model, messages).choices[0].message.content
    )
    guard.assert_outcomes(model, [BUILT.get(model, "clean")])


@parametrize_models()
def test_lost_tool_calls_are_repaired(litellm: Any, guard: Guard, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    _answer(messages, _parallel(litellm, model))
    messages[2] = litellm.Message(role="assistant", content="")
    messages.append({"role": "user", "content": "Go on."})
    _ask(litellm, guard, model, messages)
    guard.assert_repaired(model)


@parametrize_models()
def test_trimmed_history_is_repaired(litellm: Any, guard: Guard, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    _answer(messages, _parallel(litellm, model))
    _ask(litellm, guard, model, [SYSTEM, *messages[3:], {"role": "user", "content": "Sum up."}])
    guard.assert_repaired(model)


@parametrize_models()
def test_missing_result_is_repaired(litellm: Any, guard: Guard, model: str) -> None:
    messages: list[Any] = [SYSTEM, ASK]
    _answer(messages, _parallel(litellm, model))
    messages[-1] = {"role": "user", "content": "Go on."}
    _ask(litellm, guard, model, messages)
    guard.assert_repaired(model)
