"""Histories real clients send are accepted by the native Gemini emulators (gemini-native.md §4):
gemini-cli (ids everywhere, the dummy signature on each Gemini 2.5 call turn, cancelled calls
answered with an error, Code Assist's wrapper), the GenAI SDK (signatures echoed, responses
without ids), the AI SDK (``response: {name, content}``, media in ``functionResponse.parts``,
dummies on unsigned Gemini 3 calls), LiteLLM (snake_case)."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator.gemini_native_rules import mint
from tests.emulator.gemini_native_builders import (
    ENDPOINTS,
    READ,
    SKIP,
    answer,
    call,
    model,
    post,
    results,
    text,
    user,
)

ENV = user("This is the Gemini CLI. We are setting up the context for our chat.")
ACK = model(text("Got it. Thanks for the context!"))
CANCELLED = {"error": "[Operation Cancelled] Reason: User cancelled the operation."}


def gemini_cli(signature: str) -> list[dict[str, Any]]:
    """gemini-cli's shape: context pair, ids on every call and response, parallel calls, a
    cancelled call, a second prompt whose step signs its first call."""
    first = call(id="read_file-1-a", signature=signature)
    return [
        ENV, ACK, user("Read a and b."),
        model(first, call(id="read_file-1-b", args={"path": "b"})),
        results(answer(id="read_file-1-a", response={"output": "A"}),
                answer(id="read_file-1-b", response=CANCELLED)),
        model(text("a holds A; b was cancelled.")),
        user("Now c."),
        model(text("Reading c."), call(id="read_file-2", args={"path": "c"}, signature=signature)),
        results(answer(id="read_file-2", response={"output": "C"})),
    ]  # fmt: skip


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_gemini_cli_on_gemini_2_5_with_the_dummy(endpoint: str) -> None:
    body = {"contents": gemini_cli(SKIP), "tools": [READ],
            "systemInstruction": {"parts": [text("You are gemini-cli.")]},
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}}}  # fmt: skip
    if endpoint == "code-assist":
        body["session_id"] = "s-1"
    response = post(endpoint, body, "gemini-2.5-pro")
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_gemini_cli_on_gemini_3_echoing_signatures(endpoint: str) -> None:
    response = post(endpoint, {"contents": gemini_cli(mint(endpoint, "s"))}, "gemini-3-pro-preview")
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_genai_sdk_history(endpoint: str) -> None:
    """Chat history kept verbatim: signed first call, unsigned parallel call, responses without
    ids (automatic function calling answers ``{"result": …}``), media beside a response."""
    contents = [
        user("Read a and b."),
        model(call(id="x-0", signature=mint(endpoint, "t")), call(id="x-1")),
        results(answer(response={"result": "A"}), answer(response={"result": "B"}),
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}),
        model(text("Both read.")),
        user("Thanks."),
    ]  # fmt: skip
    assert post(endpoint, {"contents": contents}, "gemini-3-flash-preview").status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_ai_sdk_history(endpoint: str) -> None:
    media = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    contents = [
        user("Look at a.png, then deny b."),
        model(call(signature=SKIP), call(args={"path": "b"})),
        results(answer(response={"name": "read_file", "content": "see image"}) | {},
                answer(response={"name": "read_file", "content": "Denied by the user."})),
    ]  # fmt: skip
    contents[2]["parts"][0]["functionResponse"]["parts"] = [media]
    assert post(endpoint, {"contents": contents}, "gemini-3-pro-preview").status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_litellm_snake_case_history(endpoint: str) -> None:
    contents = [
        {"role": "user", "parts": [{"text": "Read a."}]},
        {"role": "model", "parts": [{"function_call": {"name": "read_file", "args": {"p": 1}},
                                     "thought_signature": SKIP}]},
        {"role": "user", "parts": [{"function_response": {"name": "read_file",
                                                          "response": {"content": "x"}}}]},
    ]  # fmt: skip
    body = {"contents": contents, "system_instruction": {"parts": [{"text": "Hi."}]},
            "tools": [{"function_declarations": [{"name": "read_file"}]}],
            "safety_settings": [], "generation_config": {"temperature": 0}}  # fmt: skip
    assert post(endpoint, body, "gemini-3-pro-preview").status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_built_in_tool_parts_and_thoughts_stay_in_the_model_turn(endpoint: str) -> None:
    contents = [
        user("Compute."),
        model({"text": "Thinking about it.", "thought": True},
              {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
              {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
              text("It prints 1.")),
        user("Thanks."),
    ]  # fmt: skip
    assert post(endpoint, {"contents": contents}, "gemini-2.5-flash").status_code == 200
