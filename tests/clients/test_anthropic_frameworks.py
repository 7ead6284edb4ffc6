"""LangChain's ``ChatAnthropic``, pydantic-ai's ``AnthropicModel`` and LiteLLM's ``anthropic/``
provider pointed at the proxy's Messages API, on the five Messages providers.

Each library builds the history with its own types and serializer: the tool loops it drives are
``clean`` and forwarded byte for byte, except where the library's own form breaks a provider's
rule (`PYDANTIC_AI`, `LITELLM`: repaired); the broken form LangChain users hit (``trim_messages``
cutting the AI message of a tool call, langchain#29637: an orphan ``tool_result``) is
``repaired`` and answered 200.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.conftest import TIMEOUT, require
from tests.clients.messages_guard import (
    ASK,
    CLIENT_KEY,
    MESSAGES_MODELS,
    READ_FILE,
    SYSTEM,
    MessagesGuard,
    messages_rules,
)

MODELS = tuple(MESSAGES_MODELS)
parametrize_models = pytest.mark.parametrize("model", MODELS, ids=MODELS)
#: LiteLLM's own logging re-serializes messages and warns on plain-dict tool calls (as in
#: test_litellm.py); the bytes sent are what these tests compare.
pytestmark = pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
#: pydantic-ai sends no thinking block back when its signature is empty, as DeepSeek's is, so
#: the tool turn lacks the thinking DeepSeek wants (M21): repaired.
PYDANTIC_AI = {"deepseek-chat": ["clean", "repaired"]}
#: LiteLLM marks every tool ``"type": "custom"``, which DeepSeek's deserializer refuses
#: (M31, decolua/9router#3905): repaired.
LITELLM = {"deepseek-chat": ["repaired", "repaired"]}


def expect(model: str, table: dict[str, list[str]], requests: int) -> list[str]:
    """The outcomes `model`'s requests must meet; skipped while the proxy has no Messages rules
    and some of them need a repair."""
    expected = table.get(model, ["clean"] * requests)
    if "repaired" in expected and not messages_rules():
        pytest.skip("the proxy has no Messages rules yet (issue 21 item 2)")
    return expected


def chat_anthropic(mguard: MessagesGuard, model: str) -> Any:
    module = require("langchain_anthropic")
    llm = module.ChatAnthropic(
        model=model,
        base_url=mguard.url,
        api_key=CLIENT_KEY,
        max_retries=0,
        default_request_timeout=TIMEOUT,
        max_tokens=1024,
    )
    return llm.bind_tools([READ_FILE])


@parametrize_models
def test_langchain_tool_loop_is_clean(mguard: MessagesGuard, model: str) -> None:
    messages = require("langchain_core.messages")
    llm = chat_anthropic(mguard, model)
    history: list[Any] = [messages.SystemMessage(SYSTEM), messages.HumanMessage(ASK)]
    answer = llm.invoke(history)
    [call] = answer.tool_calls
    history += [answer, messages.ToolMessage("x = 1", tool_call_id=call["id"])]
    final = llm.invoke(history)
    assert final.text == "The tool returned: x = 1"
    mguard.assert_clean(model, 2)


@parametrize_models
def test_langchain_trimmed_history_is_repaired(mguard: MessagesGuard, model: str) -> None:
    """``trim_messages`` kept the tool result but cut the AI message that called the tool."""
    if not messages_rules():
        pytest.skip("the proxy has no Messages rules yet (issue 21 item 2)")
    messages = require("langchain_core.messages")
    llm = chat_anthropic(mguard, model)
    history: list[Any] = [messages.SystemMessage(SYSTEM), messages.HumanMessage(ASK)]
    answer = llm.invoke(history)
    [call] = answer.tool_calls
    trimmed = [history[0], messages.ToolMessage("x = 1", tool_call_id=call["id"])]
    trimmed.append(messages.HumanMessage("And now?"))
    llm.invoke(trimmed)
    mguard.assert_outcomes(model, ["clean", "repaired"])


def _pydantic_ai_run(mguard: MessagesGuard, model: str) -> Any:
    pydantic_ai = require("pydantic_ai")
    anthropic = require("anthropic")
    model_class = require("pydantic_ai.models.anthropic").AnthropicModel
    provider_class = require("pydantic_ai.providers.anthropic").AnthropicProvider

    async def main() -> Any:
        async with anthropic.AsyncAnthropic(
            base_url=mguard.url, api_key=CLIENT_KEY, max_retries=0, timeout=TIMEOUT
        ) as client:
            llm = model_class(model, provider=provider_class(anthropic_client=client))
            agent = pydantic_ai.Agent(llm, instructions=SYSTEM)

            @agent.tool_plain
            def read_file(path: str) -> str:
                """Read a file of the project."""
                return f"{path}: x = 1"

            result = await agent.run(ASK)
            return result.output

    return asyncio.run(main())


@parametrize_models
def test_pydantic_ai_agent_loop(mguard: MessagesGuard, model: str) -> None:
    expected = expect(model, PYDANTIC_AI, 2)
    assert _pydantic_ai_run(mguard, model) == "The tool returned: config.py: x = 1"
    mguard.assert_outcomes(model, expected)


@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The package with its local cost map and a closed-after event loop (see test_litellm)."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    module = require("litellm")
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield module
    finally:
        asyncio.set_event_loop(None)
        loop.close()


OPENAI_READ_FILE = {
    "type": "function",
    "function": {
        "name": READ_FILE["name"],
        "description": READ_FILE["description"],
        "parameters": READ_FILE["input_schema"],
    },
}


@parametrize_models
def test_litellm_tool_loop(litellm: Any, mguard: MessagesGuard, model: str) -> None:
    """``litellm.completion(model="anthropic/…", api_base=<proxy>)``: LiteLLM translates its
    OpenAI-shaped history to Messages and posts it to ``<api_base>/v1/messages``."""
    expected = expect(model, LITELLM, 2)
    options = {
        "api_base": mguard.url,
        "api_key": CLIENT_KEY,
        "timeout": TIMEOUT,
        "max_tokens": 1024,
    }
    history: list[Any] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ASK}]
    kwargs = {"model": f"anthropic/{model}", "tools": [OPENAI_READ_FILE], **options}
    answer = litellm.completion(messages=history, **kwargs).choices[0].message
    [call] = answer.tool_calls
    history.append(answer.model_dump(exclude_none=True))
    history.append({"role": "tool", "tool_call_id": call.id, "content": "x = 1"})
    final = litellm.completion(messages=history, **kwargs).choices[0].message
    assert final.content == "The tool returned: x = 1"
    mguard.assert_outcomes(model, expected)


def test_litellm_reused_call_ids_are_repaired_for_claude(
    litellm: Any, mguard: MessagesGuard
) -> None:
    """An agent reusing one call id in every round (trycua/cua#524, through LiteLLM): Anthropic
    wants ``tool_use`` ids unique in the whole request (M5)."""
    model = "claude-sonnet-4-6"
    expect(model, {model: ["repaired"]}, 1)

    def round_(path: str) -> list[dict[str, Any]]:
        arguments = f'{{"path": "{path}"}}'
        call = {"id": "call_1", "type": "function",
                "function": {"name": "read_file", "arguments": arguments}}  # fmt: skip
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": f"{path}: x = 1"},
        ]

    history = [{"role": "user", "content": "Read a.py and b.py."}, *round_("a.py"),
               *round_("b.py")]  # fmt: skip
    litellm.completion(
        model=f"anthropic/{model}", messages=history, tools=[OPENAI_READ_FILE],
        api_base=mguard.url, api_key=CLIENT_KEY, timeout=TIMEOUT, max_tokens=1024,
    )  # fmt: skip
    mguard.assert_repaired(model)
