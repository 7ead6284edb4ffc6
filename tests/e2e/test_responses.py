"""``POST /v1/responses`` through the proxy, over real sockets, to the strict Responses emulator.

What issue 13 ("Done when") asks of the Responses unit, end to end: the ``openai`` SDK's
``client.responses.create`` (plain and streamed, unbuffered), valid Codex-shaped histories
forwarded byte for byte, broken histories of every kind the rules cover repaired (nothing the
user wrote and no call output lost, a record with a diff, the metric), unrepairable ones refused
before anything is sent, and repair on reject when the policy only warned. Every broken body is
first shown to be refused by the emulator's own validator, so a repair that stopped working
fails here as the upstream's 400, not silently.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import orjson
import pytest

from proxy.emulator import ReceivedRequest
from proxy.emulator.responses import validate_responses
from proxy.emulator.responses_answer import responses_reply
from tests.e2e.conftest import Proxy, Upstream

PACING_MS = 50
CHUNKS = 8
OUTCOME = "x-toolcall-guard-outcome"
RULES = "x-toolcall-guard-rules"
RECORD = "x-toolcall-guard-record"
HINT = "gAAAAABoZ3Rlc3QtZW5jcnlwdGVkLXJlYXNvbmluZy1ibG9i"  # an opaque encrypted_content


# --- helpers ----------------------------------------------------------------------------------


def post(proxy: Proxy, body: Any, **headers: str) -> httpx.Response:
    """POST ``body`` (bytes as they are, anything else as JSON) to the proxy's /v1/responses."""
    content = body if isinstance(body, bytes) else orjson.dumps(body)
    sent = {"content-type": "application/json", **headers}
    return proxy.http.post(proxy.v1 + "/responses", content=content, headers=sent)


def received(upstream: Upstream) -> list[ReceivedRequest]:
    """The Responses requests the emulator received."""
    return [r for r in upstream.received if r.path.endswith("/responses")]


def stored(proxy: Proxy, record_id: str) -> dict[str, Any]:
    """``GET /repairs/{id}``: readable at once (the writer serves records not yet stored)."""
    response = proxy.http.get(f"{proxy.url}/repairs/{record_id}")
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


def metric(proxy: Proxy, name: str, **labels: str) -> float:
    text = proxy.http.get(proxy.url + "/metrics").text
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def texts(content: Any) -> Iterator[str]:
    """The texts of a message's content or an output (a string or a list of parts)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield part["text"]


def user_texts(items: list[dict[str, Any]]) -> list[str]:
    return [t for i in items if i.get("role") == "user" for t in texts(i.get("content"))]


def output_texts(items: list[dict[str, Any]]) -> list[str]:
    return [
        t for i in items if str(i.get("type", "")).endswith("_output") for t in texts(i["output"])
    ]


def assert_nothing_lost(sent: list[dict[str, Any]], forwarded: list[dict[str, Any]]) -> None:
    """Every user text and every call output sent is still there (an output may have become a
    user text when its call was lost)."""
    kept_users = user_texts(forwarded)
    kept_all = kept_users + output_texts(forwarded)
    for text in user_texts(sent):
        assert any(text in kept for kept in kept_users), f"user text lost: {text!r}"
    for text in output_texts(sent):
        assert any(text in kept for kept in kept_all), f"call output lost: {text!r}"


# --- items ------------------------------------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def said(text: str, item_id: str | None = None) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {"type": "message", "role": "assistant", "content": [part]}
    return item if item_id is None else {"id": item_id, **item}


def call(call_id: str, item_id: str | None = None, name: str = "shell") -> dict[str, Any]:
    item = {"type": "function_call", "call_id": call_id, "name": name, "arguments": '{"cmd":"ls"}'}
    return item if item_id is None else {"id": item_id, **item}


def output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def reasoning(item_id: str, blob: str | None = HINT) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": []}
    return item if blob is None else {**item, "encrypted_content": blob}


SHELL = {
    "type": "function",
    "name": "shell",
    "description": "Run a command.",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
    "strict": False,
}
ASK = user("List the files, then read the README.")
AGAIN = user("Now summarise what you found.")


def body(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "input": items, "tools": [SHELL], **extra}


# --- 1. the openai SDK, plain and streamed ----------------------------------------------------


def sdk(proxy: Proxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.v1, api_key="sk-test", max_retries=0, timeout=10)


def test_the_sdk_creates_a_response_through_the_proxy(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    raw = sdk(proxy).responses.with_raw_response.create(model="gpt-4o", input="Say hello.")
    response = raw.parse()
    assert raw.headers[OUTCOME] == "clean"
    assert response.output_text == "Emulated openai answer to: Say hello."
    assert response.id.startswith("resp_")
    assert [r.path for r in received(upstreams["openai"])] == ["/v1/responses"]


def test_the_sdk_streams_every_event_in_order_and_unbuffered(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    client = sdk(proxy)
    # The SDK builds its event models on first use (~0.2 s): warm it up, or the first events
    # would pile up in the socket while it does, and look buffered.
    list(client.responses.create(model="gpt-4o", input="warm up", stream=True))
    upstreams["openai"].received.clear()
    started = time.perf_counter()
    stream = client.responses.create(
        model="gpt-4o",
        input=[ASK],
        stream=True,
        extra_headers={"x-emulator-pacing-ms": str(PACING_MS), "x-emulator-chunks": str(CHUNKS)},
    )
    events, arrivals = [], []
    for event in stream:
        arrivals.append(time.perf_counter() - started)
        events.append(event)
    # What the emulator sent for the bytes it received: every frame must reach the SDK, in order.
    (request,) = received(upstreams["openai"])
    frames = responses_reply(request.body, CHUNKS)
    assert isinstance(frames, list)
    expected = [orjson.loads(f.split(b"\ndata: ", 1)[1]) for f in frames]
    assert [e.type for e in events] == [e["type"] for e in expected]
    assert [e.sequence_number for e in events] == list(range(len(expected)))
    assert sum(e.type == "response.output_text.delta" for e in events) == CHUNKS
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text.startswith("Emulated openai answer to: List the files")
    # The emulator sleeps PACING_MS between frames: buffering anywhere would bunch them up.
    assert arrivals[-1] - arrivals[0] >= (len(arrivals) - 1) * PACING_MS / 1000 * 0.8
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    assert sum(gap > PACING_MS / 1000 / 2 for gap in gaps) >= len(gaps) - 2


def test_a_streamed_answer_is_relayed_byte_for_byte(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    sent = orjson.dumps(body([ASK, call("call_1"), output("call_1", "a.txt b.txt")], stream=True))
    got = b""
    with proxy.http.stream(
        "POST", proxy.v1 + "/responses", content=sent, headers={"x-emulator-chunks": "3"}
    ) as response:
        assert response.headers[OUTCOME] == "clean"
        assert response.headers["content-type"].startswith("text/event-stream")
        for chunk in response.iter_raw():
            got += chunk
    (request,) = received(upstreams["openai"])
    assert request.body == sent
    frames = responses_reply(sent, 3)
    assert isinstance(frames, list)
    assert got == b"".join(frames)


# --- 2. valid histories: forwarded as the very bytes sent --------------------------------------

CUSTOM_PATCH = "*** Begin Patch\n*** Update File: README.md\n@@\n-old\n+new\n*** End Patch\n"
EXEC = {"type": "exec", "command": ["bash", "-lc", "ls -la"], "timeout_ms": 10000}


def codex_turns() -> list[dict[str, Any]]:
    """A Codex turn as it replays it with ``store: false``: items without ids, reasoning inline
    with ``encrypted_content``, parallel calls, ``custom_tool_call`` (apply_patch) and
    ``local_shell_call`` answered by ``function_call_output`` (as codex does)."""
    return [
        {
            "type": "message",
            "role": "developer",
            "content": [
                {"type": "input_text", "text": "<permissions>workspace-write</permissions>"}
            ],
        },
        user("Fix the README typo and run the tests — s'il vous plaît."),
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "**Reading files**"}],
            "content": None,
            "encrypted_content": HINT,
        },
        call("call_read_a", name="shell"),
        call("call_read_b", name="shell"),
        output("call_read_a", "README.md: Teh project"),
        output("call_read_b", "tests/: test_a.py"),
        {"type": "reasoning", "summary": [], "content": None, "encrypted_content": HINT + "2"},
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": "call_patch",
            "name": "apply_patch",
            "input": CUSTOM_PATCH,
        },
        {
            "type": "custom_tool_call_output",
            "call_id": "call_patch",
            "output": "Success. Updated the following files:\nM README.md\n",
        },
        {
            "type": "local_shell_call",
            "call_id": "call_shell",
            "status": "completed",
            "action": EXEC,
        },
        output("call_shell", '{"output":"2 passed","metadata":{"exit_code":0}}'),
        said("Fixed the typo; the tests pass."),
        user("Thanks!"),
    ]


def stored_turns() -> list[dict[str, Any]]:
    """The same kinds replayed with ids (``store`` on), each reasoning item in front of what it
    produced, and a ``local_shell_call_output``."""
    return [
        user("Fix the README typo."),
        reasoning("rs_68a1"),
        call("call_read_a", "fc_68a1_a"),
        call("call_read_b", "fc_68a1_b"),
        output("call_read_a", "README.md: Teh project"),
        output("call_read_b", "tests/: test_a.py"),
        reasoning("rs_68a2"),
        {
            "type": "custom_tool_call",
            "id": "ctc_68a2",
            "call_id": "call_patch",
            "name": "apply_patch",
            "input": CUSTOM_PATCH,
        },
        {
            "type": "custom_tool_call_output",
            "call_id": "call_patch",
            "output": [{"type": "input_text", "text": "Success."}],
        },
        reasoning("rs_68a3"),
        {
            "type": "local_shell_call",
            "id": "lsh_68a3",
            "call_id": "call_shell",
            "status": "completed",
            "action": EXEC,
        },
        {
            "type": "local_shell_call_output",
            "id": "call_shell",
            "call_id": "call_shell",
            "output": "2 passed",
        },
        reasoning("rs_68a4"),
        said("Fixed; the tests pass.", "msg_68a4"),
        user("Thanks!"),
    ]


CODEX_TOOLS = [
    SHELL,
    {"type": "local_shell"},
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "Apply a patch.",
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
    },
]
VALID = {
    "codex_store_false": {
        "model": "gpt-5-codex",
        "instructions": "You are Codex.",
        "input": codex_turns(),
        "tools": CODEX_TOOLS,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199a7c2-5d1e-7c3a-9f00-3c0ffee00001",
    },
    "stored_with_ids": {"model": "o3", "input": stored_turns(), "tools": CODEX_TOOLS},
    "string_input": {"model": "gpt-4o", "input": "Just a question."},
}


@pytest.mark.parametrize("name", list(VALID))
def test_a_valid_history_is_forwarded_byte_for_byte(
    proxy: Proxy, upstreams: dict[str, Upstream], name: str
) -> None:
    original = VALID[name]
    assert validate_responses(original) is None  # the emulator accepts it as it is
    # Bytes no serializer here would produce (indentation, escaped non-ASCII): any re-encoding
    # on the way would show.
    sent = (orjson.dumps(original, option=orjson.OPT_INDENT_2).decode()).replace("î", "\\u00ee")
    sent = sent.replace("—", "\\u2014").encode()
    response = post(proxy, sent)
    assert response.status_code == 200, response.text
    assert response.headers[OUTCOME] == "clean"
    assert RECORD not in response.headers
    (request,) = received(upstreams["openai"])
    assert request.body == sent


# --- 3. broken histories: repaired, nothing lost, recorded, counted ----------------------------

LONG_ID = "toolu_" + "01HXQ8ZKJ3V7N2M4P6R8T0W2Y4" * 4  # 110 chars: another provider's call id
BROKEN: dict[str, tuple[str, str, dict[str, Any]]] = {
    # name: (the emulator's row, the rule that repairs it, the body)
    "missing_output": (
        "R1",
        "responses_missing_output",
        body([ASK, call("call_a"), call("call_b"), output("call_a", "a.txt b.txt"), AGAIN]),
    ),
    "orphan_output": (
        "R2",
        "responses_orphan_output",
        body([ASK, output("call_gone", "README says: build with make"), AGAIN]),
    ),
    "duplicate_items": (
        "R9",
        "responses_duplicate_item",
        body([ASK, call("call_a", "fc_1"), output("call_a", "a.txt")] * 2 + [AGAIN]),
    ),
    "reasoning_not_followed": (
        "R3",
        "responses_reasoning_adjacency",
        body([ASK, reasoning("rs_1"), AGAIN], model="o3"),
    ),
    "id_prefix": (
        "R10",
        "responses_id_prefix",
        body([ASK, call("call_a", "item_c270d5511c7129adc7475632"), output("call_a", "a.txt")]),
    ),
    "call_id_too_long": (
        "R11",
        "responses_call_id_format",
        body([ASK, call(LONG_ID), output(LONG_ID, "a.txt b.txt"), AGAIN]),
    ),
    "output_text_in_output": (
        "R13",
        "responses_output_content_types",
        body(
            [
                ASK,
                call("call_a"),
                {
                    "type": "function_call_output",
                    "call_id": "call_a",
                    "output": [{"type": "output_text", "text": "a.txt b.txt"}],
                },
            ]
        ),
    ),
    "store_false_reasoning_by_id": (
        "R6",
        "responses_store_false",
        body(
            [ASK, reasoning("rs_1", blob=None), call("call_a"), output("call_a", "a.txt"), AGAIN],
            store=False,
        ),
    ),
    "store_false_call_by_reference": (  # issue 32: the reference goes, its output is salvaged
        "R6",
        "responses_store_false",
        body(
            [ASK, {"type": "item_reference", "id": "fc_68a1"}, output("call_a", "a.txt"), AGAIN],
            store=False,
        ),
    ),
    "reasoning_missing_for_replayed_call": (
        "R4",
        "responses_missing_reasoning_ref",
        body(
            [ASK, call("call_a", "fc_" + "3f" * 20 + "_0"), output("call_a", "a.txt"), AGAIN],
            model="o3",
        ),
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_history_is_repaired_recorded_and_counted(
    proxy: Proxy, upstreams: dict[str, Upstream], name: str
) -> None:
    row, rule, sent = BROKEN[name]
    refusal = validate_responses(sent)
    assert refusal is not None
    assert refusal.rule == row
    labels = {"upstream": "openai", "api": "responses", "outcome": "repaired"}
    before = metric(proxy, "toolcall_guard_outcomes_total", **labels)

    response = post(proxy, sent)

    assert response.status_code == 200, response.text
    assert response.headers[OUTCOME] == "repaired"
    assert rule in response.headers[RULES]
    (request,) = received(upstreams["openai"])
    forwarded = orjson.loads(request.body)
    assert validate_responses(forwarded) is None
    assert_nothing_lost(sent["input"], forwarded["input"])
    assert {k: v for k, v in forwarded.items() if k != "input"} == {
        k: v for k, v in sent.items() if k != "input"
    }
    record = stored(proxy, response.headers[RECORD])
    assert record["outcome"] == "repaired"
    assert record["path"] == "/v1/responses"
    assert record["received"] == sent
    assert record["forwarded"] == forwarded
    assert rule in {f["rule"] for f in record["findings"]}
    assert all(f["path"].startswith("input[") for f in record["findings"])
    diff = record["diff"]
    assert any(entry["op"] != "unchanged" for entry in diff["messages"])
    assert diff["unified"]
    assert metric(proxy, "toolcall_guard_outcomes_total", **labels) == before + 1


# --- 4. unrepairable: a 400 naming the place and the rule, nothing sent ------------------------

UNREPAIRABLE = {
    "previous_response_id_with_conversation": (
        body([AGAIN], previous_response_id="resp_" + "0a" * 20, conversation="conv_68a1"),
        "conversation",
        "responses_state_conflict",
    ),
    "item_reference_with_store_false": (
        body([ASK, {"type": "item_reference", "id": "msg_68a1"}, AGAIN], store=False),
        "input[1].id",
        "responses_store_false",
    ),
}


@pytest.mark.parametrize("name", list(UNREPAIRABLE))
def test_an_unrepairable_history_is_refused_before_anything_is_sent(
    proxy: Proxy, upstreams: dict[str, Upstream], name: str
) -> None:
    sent, where, rule = UNREPAIRABLE[name]
    assert validate_responses(sent) is not None
    response = post(proxy, sent)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == where
    assert error["message"].startswith(f"{where}: ")
    assert f"(rule {rule})" in error["message"]
    assert error["code"] == "invalid_tool_history"
    assert received(upstreams["openai"]) == []
    record = stored(proxy, response.headers[RECORD])
    assert record["outcome"] == "rejected"
    assert record["received"] == sent
    assert record["forwarded"] is None


# --- 5. a policy that only warns: the upstream refuses, the proxy repairs and retries once -----


def test_a_warned_history_the_upstream_refuses_is_repaired_and_retried_once(
    start_proxy: Callable[..., Proxy], upstreams: dict[str, Upstream]
) -> None:
    proxy = start_proxy(
        {"openai": upstreams["openai"].url},
        upstream_overrides={"policy": "lenient"},
        policies={"lenient": {"base": "openai", "rules": {"responses_missing_output": "warn"}}},
    )
    sent = orjson.dumps(body([ASK, call("call_a"), call("call_b"), output("call_a", "a.txt")]))

    response = post(proxy, sent)

    assert response.status_code == 200, response.text
    assert response.headers["x-toolcall-guard-retried"] == "responses_missing_output"
    first, second = received(upstreams["openai"])
    assert first.body == sent  # warned: forwarded as sent, and refused (R1)
    refusal = validate_responses(orjson.loads(first.body))
    assert refusal is not None
    assert refusal.rule == "R1"
    retried = orjson.loads(second.body)
    assert validate_responses(retried) is None
    assert_nothing_lost(orjson.loads(sent)["input"], retried["input"])
    assert response.json()["output"][0]["type"] == "message"
    record = stored(proxy, response.headers[RECORD])
    first_try, second_try = record["attempts"]
    assert first_try["upstream_status"] == 400
    assert "No tool output found for function call call_b." in first_try["upstream_error"]
    assert first_try["retried_rule"] == "responses_missing_output"
    assert first_try["forwarded"] == orjson.loads(sent)
    assert second_try["upstream_status"] == 200
    assert second_try["forwarded"] == retried
    assert record["forwarded"] == retried
