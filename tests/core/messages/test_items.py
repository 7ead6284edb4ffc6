"""The structural check every Messages request gets (S1/S2), whatever the policy."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.core.messages.items import Messages, messages_of
from proxy.core.policy import build_policy
from proxy.core.wire import MESSAGES, sanitize_body
from proxy.errors import MalformedHistory

USER = {"role": "user", "content": "Hi"}
BODY = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [USER]}


@pytest.mark.parametrize(
    ("body", "place"),
    [
        ([], None),
        ({**BODY, "model": None}, "model"),
        ({k: v for k, v in BODY.items() if k != "max_tokens"}, "max_tokens"),
        ({**BODY, "max_tokens": "1024"}, "max_tokens"),
        ({**BODY, "messages": []}, "messages"),
        ({**BODY, "messages": {"role": "user"}}, "messages"),
        ({**BODY, "messages": [USER, "hi"]}, "messages[1]"),
        ({**BODY, "messages": [{"content": "x"}]}, "messages[0].role"),
        ({**BODY, "messages": [{"role": "user"}]}, "messages[0].content"),
        ({**BODY, "messages": [{"role": "user", "content": 3}]}, "messages[0].content"),
        ({**BODY, "messages": [{"role": "user", "content": ["x"]}]}, "messages[0].content[0]"),
        (
            {**BODY, "messages": [{"role": "user", "content": [{"text": "x"}]}]},
            "messages[0].content[0].type",
        ),
        (
            {**BODY, "messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text",
        ),
        (
            {
                **BODY,
                "messages": [
                    USER,
                    {"role": "assistant", "content": [{"type": "tool_use", "name": "x"}]},
                ],
            },
            "messages[1].content[0].id",
        ),
        (
            {**BODY, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
            "messages[0].content[0].tool_use_id",
        ),
    ],
)
def test_malformed_bodies_name_the_place(body: Any, place: str | None) -> None:
    with pytest.raises(MalformedHistory) as raised:
        messages_of(body)
    assert raised.value.path == place


def test_count_tokens_bodies_need_no_max_tokens() -> None:
    body = {"model": "claude-sonnet-4-5", "messages": [USER]}
    assert messages_of(body, need_max_tokens=False) is body["messages"]


def test_paths_name_the_original_place() -> None:
    history = Messages.of(BODY)
    assert history.path(0, ".content[2]") == "messages[0].content[2]"
    assert history.path(-1, ".system") == "system"
    assert history.rebuild([(USER, None)]).path(0) == "messages[+]"


def test_a_clean_request_is_the_same_list() -> None:
    outcome = sanitize_body(MESSAGES, BODY, build_policy("anthropic"))
    assert outcome.messages is BODY["messages"]
    assert outcome.status == "clean"
    assert outcome.fields == {}
