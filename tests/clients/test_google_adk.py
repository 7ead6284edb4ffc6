"""Google's Agent Development Kit (``google-adk``) through the proxy, configured as a user does:
``GOOGLE_GEMINI_BASE_URL`` at the proxy's root and ``GOOGLE_API_KEY``. An ``LlmAgent`` with a
Python function tool runs under ``InMemoryRunner`` against the strict AI Studio emulator's
scripted loop (a parallel step, a single call, then a text): every request is ``clean``, reaches
the emulator byte for byte and its answer comes back unchanged, on Gemini 2.5 (ADK mints
``adk-…`` ids for calls that have none and strips them before sending) and Gemini 3 (the
emulator's ids and signatures echoed).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.clients.conftest import require
from tests.clients.gemini_guard import CLIENT_KEY, GEMINI_MODELS, GeminiGuard
from tests.clients.test_google_genai import LOOP, read_file

#: ADK's async calls go through google-genai's aiohttp session, a subclass aiohttp frowns on.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Inheritance class AiohttpClientSession from ClientSession:DeprecationWarning"
)


async def _run(model: str) -> list[Any]:
    """Run the agent on the scripted loop; the events it yielded."""
    agents = require("google.adk.agents")
    models = require("google.adk.models")
    runners = require("google.adk.runners")
    types = require("google.genai.types")
    llm = models.Gemini(model=model)
    agent = agents.LlmAgent(
        name="coder", model=llm, instruction="You are a coding agent.", tools=[read_file]
    )
    runner = runners.InMemoryRunner(agent=agent, app_name="toolcall-guard-tests")
    session = await runner.session_service.create_session(
        app_name="toolcall-guard-tests", user_id="tester"
    )
    message = types.Content(role="user", parts=[types.Part(text=LOOP)])
    try:
        return [
            event
            async for event in runner.run_async(
                user_id="tester", session_id=session.id, new_message=message
            )
        ]
    finally:
        await runner.close()
        await llm.api_client.aio.aclose()  # the SDK's aiohttp session of this event loop


@pytest.mark.parametrize("model", GEMINI_MODELS, ids=GEMINI_MODELS)
def test_adk_agent_tool_loop_is_clean(
    gguard: GeminiGuard, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gguard.url)
    monkeypatch.setenv("GOOGLE_API_KEY", CLIENT_KEY)
    events = asyncio.run(_run(model))
    final = [e for e in events if e.is_final_response()]
    assert final, [e.model_dump(exclude_none=True) for e in events]
    assert final[-1].content.parts[-1].text == 'The tool returned: {"result": "the answer is 42"}'
    calls = [c.name for e in events for c in e.get_function_calls()]
    assert calls == ["read_file"] * 3
    requests = gguard.assert_clean(model, 3)
    gguard.assert_relayed()
    assert b"adk-" not in requests[-1].body  # ADK's own ids never reach the wire
