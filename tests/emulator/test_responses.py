"""The Responses emulator's validator: each row's exact text, param, status and row id."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.emulator.responses import validate_responses
from proxy.emulator.responses_answer import answer, events, responses_reply

H = "0123456789abcdef0123456789abcdef01234567"  # an emulator-minted hash (40 hex)
USER = {"role": "user", "content": "read a.txt"}


def fc(cid: str = "call_1", **kw: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": cid, "name": "read_file", "arguments": "{}", **kw}


def out(cid: str = "call_1", output: Any = "contents", **kw: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": cid, "output": output, **kw}


def rs(rid: str = f"rs_{H}", **kw: Any) -> dict[str, Any]:
    return {"type": "reasoning", "id": rid, "summary": [], **kw}


def body(*items: Any, **fields: Any) -> dict[str, Any]:
    return {"model": "gpt-5", **fields, "input": list(items)}


LONG = "x" * 116
CASES = [
    ("R1", body(USER, fc()), 400, "No tool output found for function call call_1.", "input"),
    (
        "R2",
        body(USER, out("call_uelf")),
        400,
        "No tool call found for function call output with call_id call_uelf.",
        "input",
    ),
    (
        "R2",
        body(USER, out(), fc()),
        400,
        "No tool call found for function call output with call_id call_1.",
        "input",
    ),
    (
        "R3",
        body(USER, rs("rs_06a2"), USER),
        400,
        "Item 'rs_06a2' of type 'reasoning' was provided without its required following item.",
        "input",
    ),
    (
        "R4",
        body(USER, fc(id=f"fc_{H}_0"), out()),
        400,
        f"Item 'fc_{H}_0' of type 'function_call' was provided without its required "
        f"'reasoning' item: 'rs_{H}'.",
        "input",
    ),
    (
        "R6",
        body(
            USER, rs("rs_1"), {"type": "message", "role": "assistant", "content": "hi"}, store=False
        ),
        404,
        "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false. "
        "Try again with `store` set to true, or remove this item from your input.",
        "input",
    ),
    (
        "R6c",
        body(USER, {"type": "item_reference", "id": "msg_unknown"}),
        404,
        "Item with id 'msg_unknown' not found.",
        "input",
    ),
    (
        "R8",
        body(USER, previous_response_id="resp_0f09a275409"),
        400,
        "Previous response with id 'resp_0f09a275409' not found.",
        "previous_response_id",
    ),
    (
        "R9",
        body(USER, fc(id="fc_1"), fc(id="fc_1"), out()),
        400,
        "Duplicate item found with id fc_1. Remove duplicate items from your input and try again.",
        "input",
    ),
    (
        "R10",
        body(USER, fc(id="item_c270d5511c7129adc7475632"), out()),
        400,
        "Invalid 'input[1].id': 'item_c270d5511c7129adc7475632'. Expected an ID that begins "
        "with 'fc'.",
        "input[1].id",
    ),
    (
        "R10",
        body(USER, rs("reasoning_15")),
        400,
        "Invalid 'input[1].id': 'reasoning_15'. Expected an ID that begins with 'rs'.",
        "input[1].id",
    ),
    (
        "R11",
        body(USER, fc(LONG), out(LONG)),
        400,
        "Invalid 'input[1].call_id': string too long. Expected a string with maximum length "
        "64, but got a string with length 116 instead.",
        "input[1].call_id",
    ),
    (
        "R12",
        body(USER, fc(), {"type": "function_call_output", "output": "x"}),
        400,
        "Missing required parameter: 'input[2].call_id'.",
        "input[2].call_id",
    ),
    (
        "R13",
        body(USER, fc(), out(output=[{"type": "output_text", "text": "x"}])),
        400,
        "Invalid value: 'output_text'. Supported values are: 'input_text', 'input_image', and "
        "'input_file'.",
        "input[2].output[0]",
    ),
    (
        "R-state",
        body(USER, previous_response_id=f"resp_{H}", conversation="conv_1"),
        400,
        "'previous_response_id' and 'conversation' cannot be used together.",
        "conversation",
    ),
]


@pytest.mark.parametrize(
    ("rule", "request_body", "status", "message", "param"),
    CASES,
    ids=[f"{c[0]}-{n}" for n, c in enumerate(CASES)],
)
def test_rejections(rule: str, request_body: Any, status: int, message: str, param: str) -> None:
    rejection = validate_responses(request_body)
    assert rejection is not None
    assert (rejection.rule, rejection.status, rejection.message) == (rule, status, message)
    error = orjson.loads(rejection.body)["error"]
    assert error["message"] == message
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"


VALID = [
    body(USER),
    {"model": "gpt-5", "input": "just text"},
    body(USER, rs(encrypted_content="gAAA"), fc(id=f"fc_{H}_0"), out()),
    body(out("call_server_side"), previous_response_id=f"resp_{H}"),
    body(
        USER,
        rs("rs_x", encrypted_content="gAAA"),
        {"type": "message", "role": "assistant", "content": "hi"},
        store=False,
    ),
    body(USER, {"type": "tool_search_output", "tools": []}),
    body(
        USER,
        {
            "type": "local_shell_call",
            "id": "lsh_1",
            "call_id": "c",
            "status": "completed",
            "action": {"type": "exec", "command": ["ls"], "env": {}},
        },
        {"type": "local_shell_call_output", "id": "c", "output": "a.py"},
    ),
    body(USER, fc("a"), fc("b"), out("b"), out("a")),
]


@pytest.mark.parametrize("request_body", VALID, ids=range(len(VALID)))
def test_valid_requests_pass(request_body: Any) -> None:
    assert validate_responses(request_body) is None


def test_answers_are_deterministic_and_chain() -> None:
    request = body(USER, tools=[{"type": "function", "name": "read_file", "parameters": {}}])
    raw = orjson.dumps(request)
    first = answer(request, raw)
    assert first == answer(request, raw)
    reasoning, call = first["output"]
    assert reasoning["type"] == "reasoning"
    assert call["type"] == "function_call"
    # Replaying the answer with its output is valid; without its reasoning it is R4.
    follow = body(USER, reasoning, call, out(call["call_id"]))
    assert validate_responses(follow) is None
    assert validate_responses(body(USER, call, out(call["call_id"]))).rule == "R4"
    chained = body(out(call["call_id"]), previous_response_id=first["id"])
    assert validate_responses(chained) is None


def test_stream_events_are_numbered_and_rebuild_the_text() -> None:
    request = body(USER, model="gpt-4.1", stream=True)
    frames = responses_reply(orjson.dumps(request))
    assert isinstance(frames, list)
    parsed = [orjson.loads(f.split(b"data: ", 1)[1]) for f in frames]
    kinds = [e["type"] for e in parsed]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed"
    assert [e["sequence_number"] for e in parsed] == list(range(len(parsed)))
    text = "".join(e["delta"] for e in parsed if e["type"] == "response.output_text.delta")
    assert text == parsed[-1]["response"]["output"][0]["content"][0]["text"]
    assert text == "Emulated openai answer to: read a.txt"
    assert events(parsed[-1]["response"], 2)[-1]["type"] == "response.completed"
