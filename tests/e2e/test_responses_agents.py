"""The Responses unit with histories and clients no one here wrote.

- The OpenAI Agents SDK (``openai-agents``) with its default model, ``OpenAIResponsesModel``, on
  an ``AsyncOpenAI`` client pointed at the proxy, drives a tool loop against the strict
  emulator (which calls the first function tool when the last item is a user message, then
  answers the tool output): every request must come through ``clean``. Tracing is disabled: it
  would export to OpenAI's servers.
- Histories from other projects' test suites (``tests/cases/responses_external/*.json``, each
  citing its repository and path), broken the way their tests break them, come back 200 with
  every user text and call output kept.
"""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from proxy.emulator.responses import validate_responses
from tests.e2e.conftest import Proxy, Upstream
from tests.e2e.test_responses import (
    OUTCOME,
    RECORD,
    RULES,
    assert_nothing_lost,
    metric,
    post,
    received,
    stored,
)

CASES = Path(__file__).parent.parent / "cases" / "responses_external"


def _outcomes(proxy: Proxy) -> dict[str, float]:
    names = ("clean", "repaired", "warned", "rejected")
    return {
        outcome: metric(
            proxy,
            "toolcall_guard_outcomes_total",
            upstream="openai",
            api="responses",
            outcome=outcome,
        )
        for outcome in names
    }


@pytest.mark.parametrize("model", ["gpt-4o", "o3"])
def test_the_agents_sdk_runs_a_tool_loop_on_responses_and_every_request_is_clean(
    proxy: Proxy, upstreams: dict[str, Upstream], model: str
) -> None:
    agents = importlib.import_module("agents")
    openai = importlib.import_module("openai")
    agents.set_tracing_disabled(True)
    ran: list[str] = []

    @agents.function_tool
    def list_files() -> str:
        """List the files of the project."""
        ran.append("list_files")
        return "config.py README.md"

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=proxy.v1, api_key="sk-client", max_retries=0, timeout=10
        ) as client:
            responses_model = agents.OpenAIResponsesModel(model=model, openai_client=client)
            agent = agents.Agent(
                name="coder",
                instructions="You are a coding agent.",
                model=responses_model,
                tools=[list_files],
            )
            return await agents.Runner.run(agent, "Which files are there?", max_turns=4)

    before = _outcomes(proxy)
    result = asyncio.run(main())
    after = _outcomes(proxy)

    sent = received(upstreams["openai"])
    assert len(sent) == 2  # the call, then the answer to its output: a real tool loop
    assert ran == ["list_files"]
    assert result.final_output.startswith("Emulated openai answer to the tool outputs:")
    second = orjson.loads(sent[1].body)
    kinds = [item.get("type", "message") for item in second["input"]]
    assert kinds[-2:] == ["function_call", "function_call_output"]
    if model == "o3":  # a reasoning model: the SDK replays the reasoning item by id
        assert "reasoning" in kinds
    assert after["clean"] - before["clean"] == len(sent)
    assert {k: after[k] - before[k] for k in ("repaired", "warned", "rejected")} == {
        "repaired": 0,
        "warned": 0,
        "rejected": 0,
    }


def _external() -> dict[str, dict[str, Any]]:
    return {f.stem: orjson.loads(f.read_bytes()) for f in sorted(CASES.glob("*.json"))}


EXTERNAL = _external()


@pytest.mark.parametrize("name", list(EXTERNAL))
def test_a_history_from_another_projects_tests_is_repaired(
    proxy: Proxy, upstreams: dict[str, Upstream], name: str
) -> None:
    case = EXTERNAL[name]
    sent = case["body"]
    refusal = validate_responses(sent)
    assert refusal is not None
    assert refusal.rule == case["refused_as"]

    response = post(proxy, sent)

    assert response.status_code == 200, response.text
    assert response.headers[OUTCOME] == "repaired"
    fired = {pair.split("=")[0] for pair in response.headers[RULES].split(",")}
    assert fired == set(case["rules"])
    (request,) = received(upstreams["openai"])
    forwarded = orjson.loads(request.body)
    assert validate_responses(forwarded) is None
    assert_nothing_lost(sent["input"], forwarded["input"])
    record = stored(proxy, response.headers[RECORD])
    assert record["received"] == sent
    assert record["forwarded"] == forwarded
