"""The one forwarded body (:func:`proxy.core.forward.forwarded_body`): the history where the row
says, the request-level fields replaced, added or removed beside it, nothing mutated."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from proxy.core.engine import Outcome
from proxy.core.forward import forwarded_body
from proxy.core.wire import CHAT, RESPONSES

#: A made-up row whose history sits under ``request`` (as Gemini Code Assist's does).
NESTED = replace(
    CHAT, name="nested", history_key="contents", locate=lambda _: ("request", "contents")
)


def _outcome(items: list[Any], fields: dict[str, Any] | None = None, removed: Any = ()) -> Outcome:
    return Outcome(items, (), True, False, fields or {}, frozenset(removed))


def test_the_history_is_replaced_and_the_fields_beside_it_changed() -> None:
    body = {"model": "m", "system": "old", "tool_choice": "auto", "messages": [{"role": "user"}]}
    snapshot = copy.deepcopy(body)
    items = [{"role": "user", "content": "hi"}]
    sent = forwarded_body(CHAT, body, _outcome(items, {"system": "new"}, {"tool_choice"}))
    assert sent == {"model": "m", "system": "new", "messages": items}
    assert sent["messages"] is items
    assert body == snapshot


def test_a_nested_history_takes_its_fields_in_the_object_holding_it() -> None:
    inner = {"contents": [{"role": "user"}], "toolConfig": {"mode": "ANY"}, "keep": 1}
    body = {"model": "m", "project": "p", "request": inner}
    snapshot = copy.deepcopy(body)
    items = [{"role": "user", "parts": [{"text": "hi"}]}]
    outcome = _outcome(items, {"systemInstruction": {"parts": []}}, {"toolConfig"})
    sent = forwarded_body(NESTED, body, outcome)
    assert sent == {
        "model": "m",
        "project": "p",
        "request": {"contents": items, "keep": 1, "systemInstruction": {"parts": []}},
    }
    assert body == snapshot
    assert NESTED.items(sent) is items


def test_a_string_input_stays_a_string() -> None:
    body = {"model": "m", "input": "hi", "tool_choice": "auto"}
    sent = forwarded_body(RESPONSES, body, _outcome([], removed={"tool_choice"}))
    assert sent == {"model": "m", "input": "hi"}
