"""The OpenAI Agents SDK (``openai-agents``) on chat completions: ``OpenAIChatCompletionsModel``.

The Runner drives the tool loop itself (model call, tool run, model call) and converts its own
input items (``function_call``, ``function_call_output``) to chat messages with its converter.
Tracing is disabled: it would export to OpenAI's servers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.clients.conftest import (
    PARALLEL_CALLS,
    TIMEOUT,
    Guard,
    parametrize_models,
    provider_answer,
    require,
)

#: Where the SDK's chat messages break the provider's rules: an assistant tool-call message
#: with ``content: null`` is rejected by Gemini (provider-rules.md G9).
REPLAYED_CALLS = {"gemini-2.5-flash": "repaired", "gemini-3-pro-preview": "repaired"}


def _run(guard: Guard, model: str, items: list[dict[str, Any]] | str) -> Any:
    """Run an agent with one ``read_file`` tool on `model` through the proxy; its final output."""
    agents = require("agents")
    openai = require("openai")
    agents.set_tracing_disabled(True)

    @agents.function_tool
    def read_file(path: str = "README.md") -> str:
        """Read a file of the project."""
        return f"<{path}>"

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=guard.v1, api_key="sk-client", max_retries=0, timeout=TIMEOUT
        ) as client:
            chat_model = agents.OpenAIChatCompletionsModel(model=model, openai_client=client)
            agent = agents.Agent(
                name="coder",
                instructions="You are a coding agent.",
                model=chat_model,
                tools=[read_file],
            )
            result = await agents.Runner.run(agent, items, max_turns=4)
            return result.final_output

    return asyncio.run(main())


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _parallel_items(model: str) -> list[dict[str, Any]]:
    """The input items the SDK keeps for a provider answer with two parallel calls.

    The SDK's own converter turns the parsed answer into output items (reasoning included,
    Gemini's signature into ``provider_data``), as ``OpenAIChatCompletionsModel`` does.
    """
    converter = require("agents.models.chatcmpl_converter").Converter
    chat = require("openai.types.chat")
    answer = chat.ChatCompletion.model_validate(provider_answer(model, PARALLEL_CALLS))
    items = converter.message_to_output_items(
        answer.choices[0].message, provider_data={"model": model, "response_id": answer.id}
    )
    return [item.model_dump(exclude_unset=True) for item in items]


def _output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": f"<{call_id}>"}


@parametrize_models()
def test_runner_tool_loop(guard: Guard, model: str) -> None:
    output = _run(guard, model, "Read config.py.")
    assert output.startswith("The tool returned")
    guard.assert_outcomes(model, ["clean", REPLAYED_CALLS.get(model, "clean")])


@parametrize_models()
def test_parallel_round_in_the_input(guard: Guard, model: str) -> None:
    calls = _parallel_items(model)
    items = [_user("Read both."), *calls, _output("call_a1"), _output("call_b2")]
    _run(guard, model, items)
    guard.assert_outcomes(model, [REPLAYED_CALLS.get(model, "clean")])


@parametrize_models()
def test_trimmed_input_is_repaired(guard: Guard, model: str) -> None:
    """The saved input lost its head: it starts with a call's output."""
    _run(guard, model, [_output("call_a1"), _user("Summarize.")])
    guard.assert_repaired(model, 2)  # the agent's own tool round follows, still trimmed


@parametrize_models()
def test_missing_output_is_repaired(guard: Guard, model: str) -> None:
    items = [_user("Read both."), *_parallel_items(model), _output("call_a1"), _user("Go on.")]
    _run(guard, model, items)
    guard.assert_repaired(model, 2)  # the agent's own tool round follows, still broken
