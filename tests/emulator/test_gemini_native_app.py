"""The native Gemini emulators as servers: answers, routes, Code Assist's wrapper, countTokens,
model lists, auth, forced statuses, the scripted tool loop, and the ``gemini`` chat emulator's
native routes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from proxy.emulator import create_emulator_app
from proxy.emulator.gemini_native import create_gemini_native_app
from proxy.emulator.gemini_native_rules import signature_kind
from tests.emulator.gemini_native_builders import (
    ENDPOINTS,
    READ,
    answer,
    error_of,
    path,
    post,
    results,
    user,
    wire,
)
from tests.emulator.test_app import send

G3 = "gemini-3-pro-preview"
SCRIPT = (
    'Read a, then b and c. [[tool_use read_file {"path": "a"}]] '
    '[[tool_use read_file {"path": "b"}]] & [[function_call list_dir {"dir": "."}]]'
)


def unwrapped(endpoint: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The ``GenerateContentResponse`` (Code Assist: under ``response``, beside ``traceId``)."""
    if endpoint != "code-assist":
        assert "response" not in payload
        return payload
    assert set(payload) == {"response", "traceId"}
    inner: dict[str, Any] = payload["response"]
    return inner


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_text_answer(endpoint: str) -> None:
    response = post(endpoint, {"contents": [user("What is 2+2?")]})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=UTF-8"
    body = unwrapped(endpoint, response.json())
    (candidate,) = body["candidates"]
    expected = [{"text": "Emulated gemini answer to: What is 2+2?"}]
    assert candidate["content"] == {"parts": expected, "role": "model"}
    assert candidate["finishReason"] == "STOP"
    usage = body["usageMetadata"]
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"]
    assert body["modelVersion"] == "gemini-2.5-flash"
    assert body["responseId"]
    again = post(endpoint, {"contents": [user("What is 2+2?")]})
    assert again.content == response.content  # deterministic


def step(endpoint: str, contents: list[dict[str, Any]], model_id: str) -> dict[str, Any]:
    response = post(endpoint, {"contents": contents, "tools": [READ]}, model_id)
    assert response.status_code == 200, response.text
    content: dict[str, Any] = unwrapped(endpoint, response.json())["candidates"][0]["content"]
    return content


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("model_id", ["gemini-2.5-flash", G3])
def test_the_scripted_tool_loop(endpoint: str, model_id: str) -> None:
    """One call, then two parallel calls, then a text quoting the responses; Gemini 3 steps sign
    their first call (with a signature only this endpoint accepts back) and carry ids."""
    contents = [user(SCRIPT)]
    first = step(endpoint, contents, model_id)
    assert [p["functionCall"]["args"] for p in first["parts"]] == [{"path": "a"}]
    contents += [first, results(answer(response={"output": "A"}))]
    second = step(endpoint, contents, model_id)
    calls = [p["functionCall"] for p in second["parts"]]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("read_file", {"path": "b"}), ("list_dir", {"dir": "."})]  # fmt: skip
    gemini_3 = model_id == G3
    for content in (first, second):
        signatures = ["thoughtSignature" in p for p in content["parts"]]
        assert signatures == [gemini_3] + [False] * (len(signatures) - 1)
        assert all(("id" in p["functionCall"]) == gemini_3 for p in content["parts"])
    if gemini_3:
        signature = first["parts"][0]["thoughtSignature"]
        assert signature_kind(endpoint, signature) == "valid"
        others = [e for e in ENDPOINTS if e != endpoint]
        assert {signature_kind(e, signature) for e in others} == {"foreign"}
    contents += [second, results(answer(), answer("list_dir", {"output": "a b"}))]
    last = step(endpoint, contents, model_id)
    assert last["parts"] == [
        {"text": 'The tool returned: {"output": "42"} | {"output": "a b"}'}]  # fmt: skip


def test_no_declared_functions_or_mode_none_answers_text() -> None:
    assert "functionCall" not in post("aistudio", {"contents": [user(SCRIPT)]}).text
    none = {"functionCallingConfig": {"mode": "NONE"}}
    body = {"contents": [user(SCRIPT)], "tools": [READ], "toolConfig": none}
    assert "functionCall" not in post("aistudio", body).text


def test_mode_any_calls_the_allowed_function_with_placeholders() -> None:
    tools = [READ, {"functionDeclarations": [{"name": "other"}]}]
    config = {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["read_file"]}}
    body = {"contents": [user("Go.")], "tools": tools, "tool_config": config}
    parts = post("aistudio", body).json()["candidates"][0]["content"]["parts"]
    assert parts == [{"functionCall": {"name": "read_file", "args": {"path": "emulated"}}}]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_count_tokens(endpoint: str) -> None:
    if endpoint == "code-assist":
        body: Any = {"request": {"model": "models/gemini-2.5-flash", "contents": [user()]}}
    else:
        body = {"contents": [user()]}
    response = post(endpoint, body, method="countTokens")
    assert response.status_code == 200
    counted = response.json()
    assert counted["totalTokens"] > 0
    extra = {"aistudio": {"promptTokensDetails"}, "vertex": {"totalBillableCharacters"}}
    assert set(counted) == {"totalTokens"} | extra.get(endpoint, set())


def test_model_lists() -> None:
    aistudio = create_gemini_native_app("aistudio")
    for version in ("v1", "v1beta", "v1alpha"):
        listed = send(aistudio, "GET", f"/{version}/models").json()["models"]
        assert "models/gemini-3-pro-preview" in [m["name"] for m in listed]
    one = send(aistudio, "GET", "/v1beta/models/gemini-2.5-flash").json()
    assert one["name"] == "models/gemini-2.5-flash"
    assert "generateContent" in one["supportedGenerationMethods"]
    vertex = create_gemini_native_app("vertex")
    where = "/v1beta1/projects/p/locations/global/publishers/google/models"
    listed = send(vertex, "GET", where).json()["publisherModels"]
    assert "publishers/google/models/gemini-2.5-flash" in [m["name"] for m in listed]


@pytest.mark.parametrize(
    "route",
    [
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1alpha/models/gemini-2.5-flash:generateContent",
        "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
        "/v1/publishers/google/models/gemini-2.5-flash:generateContent",
        "/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent",
    ],
)
def test_versions_and_vertex_express(route: str) -> None:
    endpoint = "vertex" if "publishers" in route else "aistudio"
    app = create_gemini_native_app(endpoint)
    assert send(app, "POST", route, json={"contents": [user()]}).status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_unknown_paths_and_methods_are_404(endpoint: str) -> None:
    app = create_gemini_native_app(endpoint)
    for method, route in [("POST", path(endpoint, "gemini-2.5-flash", "embedContent")),
                          ("POST", "/v1/chat/completions"), ("GET", "/v1internal:x")]:  # fmt: skip
        response = send(app, method, route, json={})
        assert response.status_code == 404
        assert error_of(response)["status"] == "NOT_FOUND"
    other = "aistudio" if endpoint != "aistudio" else "vertex"
    response = send(app, "POST", path(other, "gemini-2.5-flash"), json={"contents": [user()]})
    assert response.status_code == 404


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_any_key_or_token_is_accepted(endpoint: str) -> None:
    for query, headers in [("?key=AIzaFAKE", {}), ("", {"x-goog-api-key": ""}),
                           ("", {"authorization": "Bearer ya29.fake"}), ("", {})]:  # fmt: skip
        response = post(endpoint, {"contents": [user()]}, query=query, headers=headers)
        assert response.status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize(("status", "name"), [(429, "RESOURCE_EXHAUSTED"), (503, "UNAVAILABLE")])
def test_forced_status(endpoint: str, status: int, name: str) -> None:
    response = post(endpoint, {"contents": []}, headers={"x-emulator-status": str(status)})
    assert response.status_code == status
    assert response.headers["retry-after"] == "1"
    error = error_of(response)
    assert error["status"] == name
    assert ("errors" in error) == (endpoint == "code-assist")


def test_the_gemini_chat_emulator_also_serves_ai_studio_natively() -> None:
    app = create_emulator_app("gemini")
    route = "/v1beta/models/gemini-3-pro-preview:generateContent?key=k"
    contents = [user(), {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                results(answer("f"))]  # fmt: skip
    refused = send(app, "POST", route, json={"contents": contents})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith("Function call is missing a thought")
    ok = send(app, "POST", route, json={"contents": [user("Hi.")]})
    assert ok.json()["candidates"][0]["content"]["parts"][0]["text"].startswith("Emulated gemini")
    assert send(app, "GET", "/v1beta/models").json()["models"]
    assert send(app, "GET", "/v1/models").json()["object"] == "list"  # the chat list stays
    chat = {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hi"}]}
    assert send(app, "POST", "/v1beta/openai/chat/completions", json=chat).status_code == 200


def test_code_assist_body_shape_is_the_wrapper() -> None:
    request = {"contents": [user()], "session_id": "s"}
    body = wire("code-assist", "gemini-2.5-pro", request)
    app = create_gemini_native_app("code-assist")
    response = send(app, "POST", "/v1internal:generateContent", content=json.dumps(body))
    assert response.json()["response"]["modelVersion"] == "gemini-2.5-pro"
    bare = send(app, "POST", "/v1internal:generateContent", json=request)
    assert bare.status_code == 400
    assert 'Unknown name "contents"' in bare.json()["error"]["message"]


def test_structured_output_answers_json_from_the_schema() -> None:
    """gemini-cli's next-speaker check asks for JSON: an enum gets its first value."""
    schema = {"type": "OBJECT", "required": ["reasoning", "next_speaker"], "properties": {
        "reasoning": {"type": "STRING"}, "next_speaker": {"type": "STRING",
                                                          "enum": ["user", "model"]}}}  # fmt: skip
    config = {"responseMimeType": "application/json", "responseJsonSchema": schema}
    body = {"contents": [user("Who speaks next?")], "generationConfig": config}
    text = post("aistudio", body).json()["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"reasoning": "emulated", "next_speaker": "user"}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_include_thoughts_opens_the_answer_with_a_thought(endpoint: str) -> None:
    config = {"thinking_config": {"include_thoughts": True}}
    body = {"contents": [user("Hi.")], "generation_config": config}
    parts = unwrapped(endpoint, post(endpoint, body).json())["candidates"][0]["content"]["parts"]
    assert parts[0] == {"text": "Emulated reasoning: the request is valid.", "thought": True}
    assert parts[1] == {"text": "Emulated gemini answer to: Hi."}
    assert len(parts) == 2


def test_a_request_can_turn_on_the_off_by_default_rules() -> None:
    ids = [user(), {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f"}}]},
           results(answer("f", id="c1"))]  # fmt: skip
    assert post("vertex", {"contents": ids}).status_code == 200
    refused = post("vertex", {"contents": ids}, headers={"x-emulator-strict": "n10, N19"})
    assert refused.status_code == 400
    assert 'Unknown name "id"' in refused.json()["error"]["message"]
    trailing = {"contents": [user(), {"role": "model", "parts": [{"text": "Hm."}]}]}
    assert post("aistudio", trailing, headers={"x-emulator-strict": "N10"}).status_code == 200
    assert post("aistudio", trailing, headers={"x-emulator-strict": "N4"}).status_code == 400
