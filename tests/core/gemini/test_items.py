"""The Gemini history view: where the history is, paths, models, spellings, copy-on-write."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.core.gemini import spelling
from proxy.core.gemini.facts import AI_STUDIO, CODE_ASSIST, LENIENT, VERTEX, facts_of
from proxy.core.gemini.items import Contents, history_location, role_of
from proxy.core.providers import PROVIDERS, Provider


def _body(**extra: Any) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], **extra}


def test_ai_studio_history_and_paths() -> None:
    body = _body(model="ignored-when-the-url-names-one")
    history = Contents.of(body, "models/gemini-3-pro-preview")
    assert history_location(body) == ("contents",)
    assert history.messages is body["contents"]
    assert history.request["contents"] is body["contents"]
    assert history.model == "gemini-3-pro-preview"
    assert history.path(0, ".parts[1]") == "contents[0].parts[1]"


def test_vertex_resource_name_gives_the_model_id() -> None:
    name = "projects/p/locations/global/publishers/google/models/gemini-3-flash-preview"
    assert Contents.of(_body(), name).model == "gemini-3-flash-preview"


def test_code_assist_wrapper() -> None:
    request = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "session_id": "s"}
    body = {"model": "gemini-2.5-pro", "project": "p", "user_prompt_id": "u", "request": request}
    history = Contents.of(body)
    assert history_location(body) == ("request", "contents")
    assert history.request["session_id"] == "s"
    assert history.model == "gemini-2.5-pro"
    assert history.path(0, ".parts[0]") == "request.contents[0].parts[0]"


def test_a_top_level_contents_wins_over_a_request_object() -> None:
    assert history_location({"contents": [], "request": {"contents": []}}) == ("contents",)


def test_edits_keep_model_location_and_origins() -> None:
    request = {"contents": [{"role": "user", "parts": [{"text": str(i)}]} for i in range(3)]}
    history = Contents.of({"model": "gemini-3-pro-preview", "request": request})
    edited = history.without({0}).edited({0: [({"role": "model", "parts": []}, None)]}, ())
    replaced = edited.replace({0: {"role": "user", "parts": [{"text": "x"}]}})
    assert (replaced.model, replaced.location) == ("gemini-3-pro-preview", ("request", "contents"))
    assert replaced.path(0) == "request.contents[1]"
    assert replaced.path(1) == "request.contents[+]"
    assert history.messages is request["contents"]  # never mutated
    assert len(request["contents"]) == 3


@pytest.mark.parametrize(
    ("part", "free"),
    [
        ({"text": "x"}, True),
        ({"executableCode": {"code": "1"}}, True),
        ({"functionCall": {"name": "f"}}, False),
        ({"function_call": {"name": "f"}}, False),
        ({"function_response": {"name": "f", "response": {}}}, False),
    ],
)
def test_tool_free_reads_both_spellings(part: dict[str, Any], free: bool) -> None:
    assert Contents.of({"contents": [{"role": "model", "parts": [part]}]}).tool_free is free


def test_roles_as_the_upstream_reads_them() -> None:
    assert role_of({"role": "assistant"}) == "model"
    assert role_of({"role": "tool"}) == "user"
    assert role_of({"parts": [{"function_call": {"name": "f"}}]}) == "model"
    assert role_of({"parts": [{"text": "x"}]}) == "user"


def test_spelling_reads_either_and_writes_the_parts_own() -> None:
    snake_part = {"function_call": {"name": "f"}}
    camel_part = {"functionCall": {"name": "f"}}
    assert spelling.snake("codeExecutionResult") == "code_execution_result"
    assert spelling.get(snake_part, "functionCall") == {"name": "f"}
    assert spelling.spelled(snake_part, "thoughtSignature") == "thought_signature"
    assert spelling.spelled(camel_part, "thoughtSignature") == "thoughtSignature"
    assert spelling.like(snake_part, "functionResponse") == "function_response"
    assert spelling.without({"thought_signature": "s", "text": "x"}, "thoughtSignature") == {
        "text": "x"
    }


def test_facts_follow_the_provider_name() -> None:
    assert facts_of({"provider": PROVIDERS["gemini"]}) is AI_STUDIO
    assert facts_of({"provider": Provider(name="vertex")}) is VERTEX
    assert facts_of({"provider": Provider(name="code-assist")}) is CODE_ASSIST
    assert facts_of({"provider": PROVIDERS["openai"]}) is LENIENT
    assert facts_of({}) is LENIENT


def test_an_empty_history_is_the_upstreams_to_refuse() -> None:
    """``contents: []`` is structurally sound: the proxy forwards it and Google answers its own
    ``contents is not specified``."""
    body: dict[str, Any] = {"contents": []}
    assert Contents.of(body).messages is body["contents"]
