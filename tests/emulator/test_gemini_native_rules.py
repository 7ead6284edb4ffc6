"""Every rule the native Gemini emulators enforce (gemini-native.md §8), with its exact text and
each endpoint's envelope (§2): AI Studio and Vertex ``{"error": {code, message, status}}``, Code
Assist the same plus ``errors[]``; parse errors with a ``BadRequest`` detail."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator.gemini_native import Strictness
from proxy.emulator.gemini_native_rules import N1, N2, N3, N4, N8, N8V, N14, mint
from tests.emulator.gemini_native_builders import (
    CONTEXT,
    ENDPOINTS,
    SKIP,
    answer,
    call,
    error_of,
    model,
    post,
    results,
    text,
    user,
)

G3 = "gemini-3-pro-preview"
N5_READ = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:read_file` , position {i}. "
    "Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
N5V_READ = (
    "Unable to submit request because function call `default_api:read_file` in the {i}. content "
    "block is missing a `thought_signature`. Learn more: "
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)
G11 = (
    "Unable to submit request because it has an empty text parameter. Add a value to the "
    "parameter and try again. Learn more: "
    "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
)

TURN_CASES = {
    "N1 partial parallel answers": (
        [user(), model(call(), call(args={"path": "b"})), results(answer())], N1),
    "N1 call left unanswered at the end": ([user(), model(call())], N1),
    "N1 interrupted call then a new prompt": ([user(), model(call()), user("Next.")], N1),
    "N1 responses split over two contents (N15)": (
        [user(), model(call(), call()), results(answer()), results(answer())], N1),
    "N2 history starting with a call": ([model(call()), results(answer())], N2),
    "N2 call after a model text": (
        [user(), model(text()), model(call()), results(answer())], N2),
    "N3 orphan response": ([user(), results(answer())], N3),
    "N3 response after a plain model turn": ([user(), model(text()), results(answer())], N3),
}  # fmt: skip


def check(response: Any, endpoint: str, message: str, status: str = "INVALID_ARGUMENT") -> Any:
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["message"] == message
    assert error["status"] == status
    if endpoint == "code-assist":
        reason = {"message": message, "domain": "global", "reason": "badRequest"}
        assert error["errors"] == [reason]
        assert list(error)[:4] == ["code", "message", "errors", "status"]
    else:
        assert "errors" not in error
    return error


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("case", TURN_CASES, ids=str)
def test_turn_rules(endpoint: str, case: str) -> None:
    contents, message = TURN_CASES[case]
    error = check(post(endpoint, {"contents": contents}), endpoint, message)
    assert "details" not in error


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_n5_first_call_of_each_current_turn_step_needs_a_signature(endpoint: str) -> None:
    signed = mint(endpoint, "x")
    contents = [
        user("Earlier."), model(call()), results(answer()),  # prior turn: not validated
        user(), model(call(signature=signed), call()), results(answer(), answer()),
        model(text("Next step."), call()), results(answer()),
    ]  # fmt: skip
    response = post(endpoint, {"contents": contents}, G3)
    wording = N5V_READ if endpoint == "vertex" else N5_READ
    check(response, endpoint, wording.format(i=6))
    assert post(endpoint, {"contents": contents}, "gemini-2.5-pro").status_code == 200
    contents[6]["parts"][1]["thoughtSignature"] = SKIP
    assert post(endpoint, {"contents": contents}, G3).status_code == 200


@pytest.mark.parametrize(("endpoint", "model_id"), [
    ("aistudio", "gemini-3.1-pro-preview"), ("aistudio", "gemini-3-flash-preview"),
    ("code-assist", "models/gemini-3-flash-preview")])  # fmt: skip
def test_n5_applies_to_every_gemini_3_id(endpoint: str, model_id: str) -> None:
    contents = [user(), model(call()), results(answer())]
    response = post(endpoint, {"contents": contents}, model_id)
    check(response, endpoint, N5_READ.format(i=1))
    for other in ("gemini-2.5-flash", "gemini-30-pro", "gemini-2.0-flash"):
        assert post(endpoint, {"contents": contents}, other).status_code == 200


def test_n5_spares_image_models_on_vertex_only() -> None:
    contents = [user(), model(call()), results(answer())]
    image = "gemini-3-pro-image-preview"
    assert post("vertex", {"contents": contents}, image).status_code == 200
    check(post("aistudio", {"contents": contents}, image), "aistudio", N5_READ.format(i=1))


@pytest.mark.parametrize(("endpoint", "accepted"), [
    ("aistudio", True), ("vertex", False), ("code-assist", False)])  # fmt: skip
def test_n16_dummy_signatures_per_endpoint(endpoint: str, accepted: bool) -> None:
    contents = [user(), model(call(signature=CONTEXT)), results(answer())]
    response = post(endpoint, {"contents": contents}, G3)
    if accepted:
        assert response.status_code == 200
    else:
        wording = N5V_READ if endpoint == "vertex" else N5_READ
        check(response, endpoint, wording.format(i=1))
    contents[1]["parts"][0]["thoughtSignature"] = SKIP
    assert post(endpoint, {"contents": contents}, G3).status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_n8_a_signature_from_elsewhere_is_refused(endpoint: str) -> None:
    other = "vertex" if endpoint != "vertex" else "aistudio"
    for signature in (mint(other, "x"), "bm90IG91cnM=", "Zm9vYmFy"):
        contents = [user("Old."), model(text("Hm.")), user(), model(call(signature=signature))]
        contents.append(results(answer()))
        for model_id in (G3, "gemini-2.5-flash"):
            response = post(endpoint, {"contents": contents}, model_id)
            check(response, endpoint, N8V if endpoint == "vertex" else N8)
    own = [user(), model(call(signature=mint(endpoint, "y"))), results(answer())]
    assert post(endpoint, {"contents": own}, G3).status_code == 200
    on_text = [user(), model(text("Hm.") | {"thoughtSignature": mint(other, "y")}), user("Go.")]
    assert post(endpoint, {"contents": on_text}, G3).status_code == 200  # not judged


def unknown(name: str, at: str) -> str:
    where = f" at '{at}'" if at else ""
    return f'Invalid JSON payload received. Unknown name "{name}"{where}: Cannot find field.'


def violations(error: dict[str, Any]) -> list[dict[str, str]]:
    (detail,) = error["details"]
    assert detail["@type"] == "type.googleapis.com/google.rpc.BadRequest"
    result: list[dict[str, str]] = detail["fieldViolations"]
    return result


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("spelling", ["thoughtSignature", "thought_signature"])
def test_n7_signature_inside_the_function_call(endpoint: str, spelling: str) -> None:
    contents = [user(), model(call(**{spelling: SKIP})), results(answer())]
    prefix = "request." if endpoint == "code-assist" else ""
    at = f"{prefix}contents[1].parts[0].function_call"
    error = check(post(endpoint, {"contents": contents}), endpoint, unknown(spelling, at))
    assert violations(error) == [{"field": at, "description": unknown(spelling, at)}]


def test_n10_vertex_refuses_ids_only_when_told() -> None:
    contents = [user(), model(call(id="c1")), results(answer(id="c1"))]
    assert post("vertex", {"contents": contents}).status_code == 200
    strict = Strictness(vertex_rejects_ids=True)
    response = post("vertex", {"contents": contents}, strict=strict)
    first = unknown("id", "contents[1].parts[0].function_call")
    second = unknown("id", "contents[2].parts[0].function_response")
    error = check(response, "vertex", f"{first}\n{second}")
    assert [v["field"] for v in violations(error)] == [
        "contents[1].parts[0].function_call", "contents[2].parts[0].function_response"]  # fmt: skip
    assert post("aistudio", {"contents": contents}, strict=strict).status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_n11_empty_contents_and_parts_listed_together(endpoint: str) -> None:
    contents = [user(), model(), results({"thoughtSignature": SKIP}), model(text())]
    lines = (
        "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty.\n"
        "* GenerateContentRequest.contents[2].parts[0].data: required oneof field 'data' must "
        "have one initialized field\n"
    )
    error = check(post(endpoint, {"contents": contents}), endpoint, lines)
    assert "details" not in error
    missing = "* GenerateContentRequest.contents: contents is not specified\n"
    check(post(endpoint, {"contents": []}), endpoint, missing)
    check(post(endpoint, {}), endpoint, missing)


def test_n11_empty_text_refused_on_vertex_only() -> None:
    contents = [user(), model(text(""), text("Sure.")), user("Go on.")]
    check(post("vertex", {"contents": contents}), "vertex", G11)
    assert post("aistudio", {"contents": contents}).status_code == 200
    contents[1]["parts"][0]["thoughtSignature"] = SKIP  # the signed tail of a stream
    assert post("vertex", {"contents": contents}).status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_n12_response_without_a_name(endpoint: str) -> None:
    contents = [user(), model(call()), results(answer(name=""))]
    line = "* GenerateContentRequest.contents[2].parts[0].function_response.name: "
    check(post(endpoint, {"contents": contents}), endpoint, line + "Name cannot be empty.\n")


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("role", ["assistant", "tool", "system", "function"])
def test_n14_roles(endpoint: str, role: str) -> None:
    contents = [user(), {"role": role, "parts": [text()]}]
    check(post(endpoint, {"contents": contents}), endpoint, N14)


def test_n14_code_assist_needs_a_role() -> None:
    contents = [{"parts": [text("Hi.")]}]
    check(post("code-assist", {"contents": contents}), "code-assist", N14)
    assert post("aistudio", {"contents": contents}).status_code == 200
    assert post("vertex", {"contents": contents}).status_code == 200


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_n18_unknown_names(endpoint: str) -> None:
    prefix = "request." if endpoint == "code-assist" else ""
    body = {"contents": [user()], "reasoning": {}}
    at = prefix.rstrip(".")
    error = check(post(endpoint, body), endpoint, unknown("reasoning", at))
    assert violations(error) == [({"field": at} if at else {}) | {
        "description": unknown("reasoning", at)}]  # fmt: skip
    leftover = {"functionResponse": {"name": "read_file", "response": {}, "tool_call_id": "c"}}
    contents = [user(), model(call()), results(leftover)]
    part = f"{prefix}contents[2].parts[0].function_response"
    check(post(endpoint, {"contents": contents}), endpoint, unknown("tool_call_id", part))
    contents = [user(), model(call() | {"id": "c1"}), results(answer())]
    check(
        post(endpoint, {"contents": contents}),
        endpoint,
        unknown("id", f"{prefix}contents[1].parts[0]"),
    )


def test_n18_code_assist_wrapper_names() -> None:
    from proxy.emulator.gemini_native import create_gemini_native_app
    from tests.emulator.test_app import send

    app = create_gemini_native_app("code-assist")
    body = {"model": "gemini-2.5-pro", "request": {"contents": [user()]}, "userPromptId": "u"}
    assert send(app, "POST", "/v1internal:generateContent", json=body).status_code == 200
    response = send(app, "POST", "/v1internal:generateContent", json=body | {"stream": True})
    check(response, "code-assist", unknown("stream", ""))


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_snake_case_is_read_like_camel_case(endpoint: str) -> None:
    signed = mint(endpoint, "z")
    contents = [
        {"role": "user", "parts": [{"text": "Read a."}]},
        {"role": "model", "parts": [{"function_call": {"name": "read_file", "args": {}},
                                     "thought_signature": signed}]},
        {"role": "user", "parts": [{"function_response": {"name": "read_file",
                                                          "response": {"output": "x"}}}]},
    ]  # fmt: skip
    body = {"contents": contents, "system_instruction": {"parts": [text("Be terse.")]},
            "generation_config": {"max_output_tokens": 10}, "tool_config": {}}  # fmt: skip
    assert post(endpoint, body, G3).status_code == 200
    del contents[1]["parts"][0]["thought_signature"]
    assert post(endpoint, body, G3).status_code == 400
    contents[2]["parts"][0]["function_response"]["name"] = ""
    assert "Name cannot be empty" in post(endpoint, body).text


def test_off_by_default_rules_and_their_texts() -> None:
    trailing = [user(), model(text())]
    assert post("aistudio", {"contents": trailing}).status_code == 200
    strict = Strictness(trailing_model_turn=True)
    check(post("aistudio", {"contents": trailing}, strict=strict), "aistudio", N4)
    scalar = [user(), model(call()), results(answer(response="42"))]
    assert post("aistudio", {"contents": scalar}).status_code == 200
    response = post("aistudio", {"contents": scalar}, strict=Strictness(struct_values=True))
    at = "contents[2].parts[0].function_response.response"
    message = f"Invalid value at '{at}' (type.googleapis.com/google.protobuf.Struct), \"42\""
    assert violations(check(response, "aistudio", message)) == [
        {"field": at, "description": message}]  # fmt: skip
    mismatched = [user(), model(call(id="c1")), results(answer(id="c2"))]
    assert post("aistudio", {"contents": mismatched}).status_code == 200
    response = post("aistudio", {"contents": mismatched}, strict=Strictness(response_ids=True))
    assert response.status_code == 400
    assert error_of(response)["message"] == (
        "Function response contents[2] (0. response) does not echo the id 'c1' of its function "
        "call."
    )


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_body_that_is_not_json(endpoint: str) -> None:
    response = post(endpoint, b"{not json")
    message = "Invalid JSON payload received. Unexpected token."
    check(response, endpoint, message)
