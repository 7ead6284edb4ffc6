"""The parse at the edge (items_of), the Items history and the sanitize_body entry point."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from proxy.core.policy import build_policy
from proxy.core.responses.items import Items, items_of
from proxy.core.wire import RESPONSES, sanitize_body
from proxy.errors import MalformedHistory

OPENAI = build_policy("openai")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ([], None),
        ({"input": 3}, "input"),
        ({"input": [1]}, "input[0]"),
        ({"input": [{"type": 7}]}, "input[0].type"),
        ({"input": [{"content": "no role, type or id"}]}, "input[0].type"),
    ],
    ids=["not_object", "input_number", "item_not_object", "type_not_string", "untyped"],
)
def test_structural_errors_are_always_400(body: Any, path: str | None) -> None:
    with pytest.raises(MalformedHistory) as caught:
        items_of(body)
    assert caught.value.path == path


@pytest.mark.parametrize("body", [{"input": "hello"}, {"previous_response_id": "resp_1"}])
def test_a_string_or_absent_input_has_no_items_and_is_clean(body: dict[str, Any]) -> None:
    outcome = sanitize_body(RESPONSES, {"model": "gpt-5", **body}, build_policy("strict"))
    assert outcome.status == "clean"
    assert outcome.messages == []


def test_a_string_input_still_meets_the_request_rules() -> None:
    body = {"model": "gpt-5", "input": "hi", "previous_response_id": "r", "conversation": "c"}
    outcome = sanitize_body(RESPONSES, body, OPENAI)
    assert outcome.rejected
    assert outcome.rejection().path == "conversation"


def test_a_clean_history_comes_back_as_the_same_list() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hello"}],
        },
    ]
    outcome = sanitize_body(RESPONSES, {"model": "gpt-4.1", "input": items}, OPENAI)
    assert outcome.messages is items
    assert not outcome.changed
    assert outcome.findings == ()


def test_paths_name_the_original_index_and_inserted_items() -> None:
    items = [{"role": "user", "content": "a"}, {"type": "item_reference", "id": "msg_1"}]
    history = Items(items).without({0})
    assert history.path(0, ".id") == "input[1].id"
    assert history.rebuild([({}, None)]).path(0) == "input[+]"
    assert history.path(-1, ".conversation") == "conversation"


def test_rules_see_the_request_read_only() -> None:
    body = {"model": "gpt-5", "input": [{"role": "user", "content": "hi"}]}
    history = Items(body["input"], request=MappingProxyType(body))
    assert history.request["model"] == "gpt-5"
    with pytest.raises(TypeError):
        history.request["store"] = False  # type: ignore[index]
