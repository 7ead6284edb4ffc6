"""Strict emulation of OpenAI's ``POST /v1/responses`` input validation.

Rows implemented (responses-api.md A2): R1, R2, R3, R4/R5, R6, R6c, R8, R9, R10, R11, R12
(as OpenAI's ``Missing required parameter``), R13; plus ``previous_response_id`` together with
``conversation``, whose upstream text no source quotes (``R-state``: our own wording).

Order, as this emulator sees a request (the first failure wins): the body is a JSON object
with a string ``model``; the state fields (``R-state``, R8); ``input`` is a string (always
valid) or an array; the schema pass over every item in order (type, required fields,
``call_id`` type and length R11, ``id`` prefix R10, output parts R13); then the semantic
passes over the whole input: duplicate ids (R9), unresolvable references (R6 with
``store: false``, R6c), reasoning adjacency (R3), reasoning references (R4/R5), outputs without
an earlier open call (R2, skipped when ``previous_response_id`` is set), calls without output
(R1, the first unanswered call).

The emulator keeps no state; its memory is in the ids it mints (see `responses_answer`):
``resp_<40 hex>`` is a response it answered (any other ``previous_response_id`` is R8);
``msg_/fc_/ctc_<40 hex>_<n>`` were produced after the reasoning item ``rs_<40 hex>`` (R4/R5
when that reasoning is absent, unless ``store`` is false or ``previous_response_id`` is set);
an ``item_reference`` resolves only to such an id (R6c otherwise).
"""

from __future__ import annotations

import re
from typing import Any

from proxy.emulator.common import Rejection, openai_rejection
from proxy.emulator.openai import not_json
from proxy.emulator.openai_errors import missing, wrong_type
from proxy.emulator.responses_items import answers, binding, check_item, item_type, produces

MINTED_RESPONSE = re.compile(r"resp_[0-9a-f]{40}")
MINTED_ITEM = re.compile(r"(msg|fc|ctc)_([0-9a-f]{40})_\d+")
MINTED_ANY = re.compile(r"(rs|msg|fc|ctc)_[0-9a-f]{32,40}(_\d+)?")
_STATE = "'previous_response_id' and 'conversation' cannot be used together."
_DUPLICATE = (
    "Duplicate item found with id {}. Remove duplicate items from your input and try again."
)
_NOT_STORED = (
    "Item with id '{}' not found. Items are not persisted when `store` is set to false. "
    "Try again with `store` set to true, or remove this item from your input."
)


def validate_responses(body: Any) -> Rejection | None:
    """The first error OpenAI reports for this Responses request body, or None."""
    found = _envelope(body)
    if found is not None or not isinstance(body, dict):
        return found
    items = body.get("input")
    if items is None or isinstance(items, str):
        return None
    if not isinstance(items, list):
        return wrong_type("input", "a string or an array", items)
    for i, item in enumerate(items):
        found = check_item(item, i)
        if found is not None:
            return found
    return _semantics(items, body)


def _envelope(body: Any) -> Rejection | None:
    if not isinstance(body, dict):
        return not_json()
    if "model" not in body:
        return missing("model")
    if not isinstance(body["model"], str):
        return wrong_type("model", "a string", body["model"])
    return _state(body)


def _state(body: dict[str, Any]) -> Rejection | None:
    previous = body.get("previous_response_id")
    if previous is not None and body.get("conversation") is not None:
        return openai_rejection("R-state", _STATE, param="conversation")
    if previous is None:
        return None
    if not isinstance(previous, str):
        return wrong_type("previous_response_id", "a string", previous)
    if MINTED_RESPONSE.fullmatch(previous) is None:
        msg = f"Previous response with id '{previous}' not found."
        return openai_rejection(
            "R8", msg, param="previous_response_id", code="previous_response_not_found"
        )
    return None


def _semantics(items: list[dict[str, Any]], body: dict[str, Any]) -> Rejection | None:
    stateless = body.get("store") is False
    chained = body.get("previous_response_id") is not None
    return (
        _duplicates(items)
        or _references(items, stateless)
        or _adjacency(items)
        or (None if stateless or chained else _reasoning_refs(items))
        or _pairing(items, chained)
    )


def _duplicates(items: list[dict[str, Any]]) -> Rejection | None:
    seen: set[str] = set()
    for item in items:
        if item_type(item) == "local_shell_call_output" and "call_id" not in item:
            continue  # its id names the call it answers
        iid = item.get("id")
        if isinstance(iid, str):
            if iid in seen:
                return openai_rejection("R9", _DUPLICATE.format(iid), param="input")
            seen.add(iid)
    return None


def _references(items: list[dict[str, Any]], stateless: bool) -> Rejection | None:
    for item in items:
        kind, iid = item_type(item), item.get("id")
        if kind == "item_reference" and stateless:
            return openai_rejection("R6", _NOT_STORED.format(iid), param="input", status=404)
        if kind == "item_reference" and MINTED_ANY.fullmatch(str(iid)) is None:
            msg = f"Item with id '{iid}' not found."
            return openai_rejection("R6c", msg, param="input", status=404)
        if kind == "reasoning" and stateless and iid and not item.get("encrypted_content"):
            return openai_rejection("R6", _NOT_STORED.format(iid), param="input", status=404)
    return None


def _adjacency(items: list[dict[str, Any]]) -> Rejection | None:
    for i, item in enumerate(items):
        if item_type(item) != "reasoning":
            continue
        j = i + 1
        while j < len(items) and item_type(items[j]) == "reasoning":
            j += 1
        if j == len(items) or not produces(items[j]):
            msg = (
                f"Item '{item.get('id', '')}' of type 'reasoning' was provided without its "
                "required following item."
            )
            return openai_rejection("R3", msg, param="input")
    return None


def _reasoning_refs(items: list[dict[str, Any]]) -> Rejection | None:
    present = {item.get("id") for item in items if item_type(item) == "reasoning"}
    for item in items:
        match = MINTED_ITEM.fullmatch(str(item.get("id")))
        if match is None or f"rs_{match.group(2)}" in present:
            continue
        msg = (
            f"Item '{item['id']}' of type '{item_type(item)}' was provided without its "
            f"required 'reasoning' item: 'rs_{match.group(2)}'."
        )
        return openai_rejection("R4", msg, param="input")
    return None


def _pairing(items: list[dict[str, Any]], chained: bool) -> Rejection | None:
    """R2 while scanning in order (outputs bind one to one to earlier open calls), then R1."""
    open_calls: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        key = binding(item)
        if key is None:
            continue
        if answers(item):
            waiting = open_calls.get(key)
            if waiting:
                waiting.pop(0)
            elif not chained:
                msg = f"No tool call found for function call output with call_id {key}."
                return openai_rejection("R2", msg, param="input")
        else:
            open_calls.setdefault(key, []).append(i)
    first = min((c for waiting in open_calls.values() for c in waiting), default=None)
    if first is None:
        return None
    msg = f"No tool output found for function call {binding(items[first])}."
    return openai_rejection("R1", msg, param="input")
