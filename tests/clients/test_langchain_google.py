"""LangChain's ``ChatGoogleGenerativeAI`` (``langchain-google-genai``, Gemini's native API)
pointed at the proxy's root (``base_url``): a bound tool, one round trip over a parallel step
(the ``AIMessage`` as LangChain returned it, then a ``ToolMessage`` per call), invoked and
streamed, on Gemini 2.5 and Gemini 3 (LangChain keeps the emulator's signature in the message's
metadata and sends it back): every request ``clean``, byte for byte, its answer unchanged.
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import pytest

from tests.clients.conftest import READ_FILE as CHAT_READ_FILE
from tests.clients.conftest import require
from tests.clients.gemini_guard import CLIENT_KEY, GEMINI_MODELS, GeminiGuard

ASK = (
    'Read config.py and app.py. [[tool_use read_file {"path": "config.py"}]] & '
    '[[tool_use read_file {"path": "app.py"}]]'
)
TEXT = 'The tool returned: {"output": "x = 1"} | {"output": "x = 1"}'
#: The chat suites' tool, as a function declaration.
READ_FILE = CHAT_READ_FILE["function"]
parametrize_models = pytest.mark.parametrize("model", GEMINI_MODELS, ids=GEMINI_MODELS)


@pytest.fixture
def llm(gguard: GeminiGuard, model: str) -> Any:
    chat = require("langchain_google_genai").ChatGoogleGenerativeAI
    google = chat(model=model, google_api_key=CLIENT_KEY, base_url=gguard.url, max_retries=0)
    return google.bind_tools([READ_FILE])


def _round_trip(llm: Any, streamed: bool) -> Any:
    messages = require("langchain_core.messages")
    history: list[Any] = [
        messages.SystemMessage("You are a coding agent."),
        messages.HumanMessage(ASK),
    ]
    for _ in range(2):
        ai = reduce(lambda a, b: a + b, llm.stream(history)) if streamed else llm.invoke(history)
        history.append(ai)
        if not ai.tool_calls:
            return ai
        for call in ai.tool_calls:
            history.append(messages.ToolMessage("x = 1", tool_call_id=call["id"]))
    raise AssertionError(f"the loop did not finish: {history}")


@pytest.mark.parametrize("streamed", [False, True], ids=["invoke", "stream"])
@parametrize_models
def test_tool_round_trip_is_clean(
    llm: Any, gguard: GeminiGuard, model: str, streamed: bool
) -> None:
    final = _round_trip(llm, streamed=streamed)
    assert final.text == TEXT
    requests = gguard.assert_clean(model, 2)
    gguard.assert_relayed()
    assert b"functionResponse" in requests[1].body
    method = ":streamGenerateContent" if streamed else ":generateContent"
    assert all(e.path.endswith(method) for e in requests)
