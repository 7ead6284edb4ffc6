"""LangChain: ``ChatOpenAI`` with ``AIMessage``/``ToolMessage`` histories, serialized by
langchain-openai itself (``bind_tools``, ``invoke``, ``stream``).
"""

from __future__ import annotations

import json
from functools import reduce
from typing import Any

import pytest

from tests.clients.conftest import (
    PARALLEL_CALLS,
    READ_FILE,
    TIMEOUT,
    Guard,
    parametrize_models,
    require,
)

#: Where LangChain's own replay breaks the provider's rules (the proxy must repair there and
#: nowhere else). ChatOpenAI keeps neither DeepSeek's ``reasoning_content`` (thinking mode
#: needs it back, provider-rules.md D4) nor Gemini 3's thought signature (G1), and sends
#: ``content: null`` on a tool-call turn, which Gemini rejects (G9).
REPLAYED_AI_MESSAGE = {
    "deepseek-reasoner": "repaired",
    "gemini-2.5-flash": "repaired",
    "gemini-3-pro-preview": "repaired",
}
#: A ToolMessage with content blocks is sent as a list of text parts: OpenAI accepts parts in
#: tool messages; DeepSeek takes strings only (content as array: rejected), and so does a
#: Gemini tool message (seed 002).
TOOL_CONTENT_BLOCKS = {"gpt-4o": "clean"}


def _messages(model: str) -> Any:
    return require("langchain_core.messages")


@pytest.fixture
def llm(guard: Guard, model: str) -> Any:
    chat_openai = require("langchain_openai").ChatOpenAI
    chat = chat_openai(
        model=model, base_url=guard.v1, api_key="sk-client", max_retries=0, timeout=TIMEOUT
    )
    return chat.bind_tools([READ_FILE])


def _start(model: str) -> list[Any]:
    m = _messages(model)
    return [m.SystemMessage("You are a coding agent."), m.HumanMessage("Read config.py.")]


def _answer(model: str, history: list[Any], ai: Any, blocks: bool = False) -> None:
    """Append the AIMessage and one ToolMessage per call (text, or content blocks)."""
    m = _messages(model)
    history.append(ai)
    for call in ai.tool_calls:
        text = f"<{call['id']}>"
        content: Any = [{"type": "text", "text": text}] if blocks else text
        history.append(m.ToolMessage(content=content, tool_call_id=call["id"]))


def _parallel(model: str) -> Any:
    """The AIMessage LangChain makes of a provider answer with two parallel calls."""
    m = _messages(model)
    calls = [
        {"id": id_, "name": name, "args": json.loads(args), "type": "tool_call"}
        for id_, name, args in PARALLEL_CALLS
    ]
    return m.AIMessage(content="", tool_calls=calls)


@parametrize_models()
def test_single_round(guard: Guard, llm: Any, model: str) -> None:
    history = _start(model)
    ai = llm.invoke(history)
    assert ai.tool_calls
    _answer(model, history, ai)
    assert llm.invoke(history).content
    guard.assert_outcomes(model, ["clean", REPLAYED_AI_MESSAGE.get(model, "clean")])


@parametrize_models()
def test_streamed_round(guard: Guard, llm: Any, model: str) -> None:
    history = _start(model)
    ai = reduce(lambda a, b: a + b, llm.stream(history))
    assert ai.tool_calls
    _answer(model, history, ai)
    assert llm.invoke(history).content
    guard.assert_outcomes(model, ["clean", REPLAYED_AI_MESSAGE.get(model, "clean")])


@parametrize_models()
def test_parallel_round_with_content_blocks(guard: Guard, llm: Any, model: str) -> None:
    history = _start(model)
    _answer(model, history, _parallel(model), blocks=True)
    assert llm.invoke(history).content
    guard.assert_outcomes(model, [TOOL_CONTENT_BLOCKS.get(model, "repaired")])


@parametrize_models()
def test_lost_tool_calls_are_repaired(guard: Guard, llm: Any, model: str) -> None:
    """An AIMessage rebuilt from its text alone (its tool_calls lost on save)."""
    m = _messages(model)
    history = _start(model)
    _answer(model, history, _parallel(model))
    history[2] = m.AIMessage(content="")
    history.append(m.HumanMessage("Go on."))
    llm.invoke(history)
    guard.assert_repaired(model)


@parametrize_models()
def test_missing_result_is_repaired(guard: Guard, llm: Any, model: str) -> None:
    m = _messages(model)
    history = _start(model)
    _answer(model, history, _parallel(model))
    del history[3]
    history.append(m.HumanMessage("Go on."))
    llm.invoke(history)
    guard.assert_repaired(model)
