"""pydantic-ai: an ``Agent`` with a tool, its loop driven by ``OpenAIChatModel`` at the proxy.

pydantic-ai heals broken histories itself before sending them: it drops tool results whose
call is gone and answers unanswered calls with "The tool call was interrupted before a result
was produced.". Its trimmed and half-answered histories therefore arrive valid, and the proxy
must forward them untouched (no second repair of what the library already fixed).

Each model goes through the provider class pydantic-ai documents for it: ``DeepSeekProvider``
(which sends ``reasoning_content`` back), ``OpenAIProvider`` for OpenAI and for Gemini's
OpenAI-compatible endpoint. Histories are pydantic-ai's own ``ModelRequest``/``ModelResponse``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.clients.conftest import (
    MODELS,
    PARALLEL_CALLS,
    TIMEOUT,
    Guard,
    parametrize_models,
    require,
)

#: Where pydantic-ai's own messages break the provider's rules, so the proxy must repair: its
#: tool-call turns carry ``content: null``, which Gemini rejects (provider-rules.md G9). It does
#: send DeepSeek's reasoning back as ``reasoning_content`` and Gemini 3's ``extra_content``.
REPLAYED = {"gemini-2.5-flash": "repaired", "gemini-3-pro-preview": "repaired"}
SIGNATURE = {"google": {"thought_signature": "c2lnbmF0dXJlLW9mLXRoZS1zdGVw"}}


def _run(guard: Guard, model: str, prompt: str | None, history: list[Any] | None = None) -> Any:
    """Run a one-tool agent on `model` through the proxy; its text output."""
    pydantic_ai = require("pydantic_ai")
    openai = require("openai")
    chat_model = require("pydantic_ai.models.openai").OpenAIChatModel
    providers = require("pydantic_ai.providers.openai"), require("pydantic_ai.providers.deepseek")

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=guard.v1, api_key="sk-client", max_retries=0, timeout=TIMEOUT
        ) as client:
            provider_class = (
                providers[1].DeepSeekProvider
                if MODELS[model] == "deepseek"
                else providers[0].OpenAIProvider
            )
            llm = chat_model(model, provider=provider_class(openai_client=client))
            agent = pydantic_ai.Agent(llm, instructions="You are a coding agent.")

            @agent.tool_plain
            def read_file(path: str = "README.md") -> str:
                """Read a file of the project."""
                return f"<{path}>"

            result = await agent.run(prompt, message_history=history)
            return result.output

    return asyncio.run(main())


def _parallel_history(model: str, *, answered: int = 2) -> list[Any]:
    """A user turn, a response with two parallel calls, and `answered` of their results."""
    m = require("pydantic_ai.messages")
    calls = [
        m.ToolCallPart(tool_name=name, args=json.loads(args), tool_call_id=id_)
        for id_, name, args in PARALLEL_CALLS
    ]
    if model.startswith("gemini-3"):
        calls[0].provider_details = {"extra_content": SIGNATURE}
    parts: list[Any] = calls
    if model == "deepseek-reasoner":
        parts = [m.ThinkingPart(content="Read both files at once."), *calls]
    returns = [
        m.ToolReturnPart(tool_name=name, content=f"<{id_}>", tool_call_id=id_)
        for id_, name, _ in PARALLEL_CALLS[:answered]
    ]
    return [
        m.ModelRequest(parts=[m.UserPromptPart(content="Read both.")]),
        m.ModelResponse(parts=parts, model_name=model),
        m.ModelRequest(parts=returns),
    ]


@parametrize_models()
def test_agent_tool_loop(guard: Guard, model: str) -> None:
    output = _run(guard, model, "Read config.py.")
    assert output.startswith("The tool returned")
    guard.assert_outcomes(model, ["clean", REPLAYED.get(model, "clean")])


@parametrize_models()
def test_parallel_round_in_the_history(guard: Guard, model: str) -> None:
    output = _run(guard, model, None, _parallel_history(model))
    assert "<call_a1> | <call_b2>" in output
    guard.assert_outcomes(model, [REPLAYED.get(model, "clean")])


@parametrize_models()
def test_trimmed_history_is_healed_by_the_library(guard: Guard, model: str) -> None:
    """The history lost its head: it starts with the request carrying the tool results."""
    _run(guard, model, "Summarize.", _parallel_history(model)[2:])
    orphans = [b"<call_a1>" in e.body for e in guard.chats()]
    assert orphans == [False, False], "pydantic-ai drops results whose call is gone"
    guard.assert_outcomes(model, ["clean", REPLAYED.get(model, "clean")])


@parametrize_models()
def test_missing_result_is_healed_by_the_library(guard: Guard, model: str) -> None:
    """One of two parallel calls has its result; the user then asks on."""
    _run(guard, model, "Go on.", _parallel_history(model, answered=1))
    assert all(b"interrupted before a result" in e.body for e in guard.chats())
    guard.assert_outcomes(model, [REPLAYED.get(model, "clean")] * 2)
