"""The Messages emulators through the ASGI app: routes, answers, SSE transcripts, scripted tool
loops, count_tokens, forced statuses; and the chat emulators of GLM, MiniMax and Anthropic."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from proxy.__main__ import _parser
from proxy.emulator import create_emulator_app, validate
from proxy.emulator.app import PREFIXES
from proxy.emulator.messages import MESSAGES_PREFIXES, validate_messages
from tests.emulator import asks, body, call
from tests.emulator import result as chat_result
from tests.emulator import user as chat_user
from tests.emulator.messages_builders import (
    PROVIDERS,
    READ,
    assistant,
    request,
    result,
    text,
    use,
    user,
    users,
)
from tests.emulator.test_app import send

ASK_READ = 'Read a. [[tool_use read_file {"path": "a"}]]'


def post(provider: str, payload: Any, path: str | None = None, **headers: str) -> Any:
    app = create_emulator_app(provider)
    content = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    path = path or MESSAGES_PREFIXES[provider][0] + "/messages"
    return send(app, "POST", path, content=content, headers=headers)


def events_of(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``(event, data)`` pairs of an SSE transcript, checking each frame's form."""
    frames = text.split("\n\n")
    assert frames[-1] == ""
    pairs = []
    for frame in frames[:-1]:
        event, data = frame.split("\n")
        kind = event.removeprefix("event: ")
        payload = json.loads(data.removeprefix("data: "))
        assert payload["type"] == kind
        pairs.append((kind, payload))
    return pairs


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_prefix_answers_a_message(provider: str) -> None:
    for prefix in MESSAGES_PREFIXES[provider]:
        payload = request(user("hello there"), provider=provider)
        response = post(provider, payload, prefix + "/messages")
        assert response.status_code == 200
        message = response.json()
        assert (message["type"], message["role"], message["stop_reason"]) == (
            "message", "assistant", "end_turn")  # fmt: skip
        assert message["content"][-1]["text"].endswith("answer to: hello there")
        assert message["id"].startswith("msg_")
        digest = hashlib.sha256(json.dumps(payload).encode()).hexdigest()
        assert response.headers["x-emulator-body-sha256"] == digest


@pytest.mark.parametrize("provider", PROVIDERS)
def test_tool_use_answer_replays_through_the_same_emulator(provider: str) -> None:
    payload = request(user(), provider=provider, tools=[READ], tool_choice={"type": "any"})
    message = post(provider, payload).json()
    assert message["stop_reason"] == "tool_use"
    call_block = message["content"][-1]
    assert call_block["name"] == "read_file"
    assert call_block["input"] == {"path": "emulated"}
    replay = request(user(), assistant(*message["content"]), users(result(call_block["id"])),
                     provider=provider, tools=[READ])  # fmt: skip
    if provider == "kimi":
        assert call_block["id"] == "functions.read_file:0"
    assert validate_messages(provider, replay) is None
    final = post(provider, replay).json()
    assert final["stop_reason"] == "end_turn"
    assert final["content"][-1]["text"] == "The tool returned: x = 1"


def test_thinking_answers_are_signed_and_replay() -> None:
    switch = {"type": "enabled", "budget_tokens": 2048}
    unscripted = request(user(), tools=[READ], thinking=switch)
    assert post("anthropic", unscripted).json()["stop_reason"] == "end_turn"  # auto: no call
    payload = request(user(ASK_READ), tools=[READ], thinking=switch)
    message = post("anthropic", payload).json()
    first, call_block = message["content"]
    assert first["type"] == "thinking"
    assert len(first["signature"]) >= 32
    replay = request(user(), assistant(*message["content"]), users(result(call_block["id"])),
                     tools=[READ], thinking=switch)  # fmt: skip
    assert validate_messages("anthropic", replay) is None


def test_deepseek_thinks_with_an_empty_signature() -> None:
    message = post("deepseek", request(user(), provider="deepseek", thinking=None))
    assert message.json()["content"][0] == {
        "type": "thinking", "thinking": "Emulated reasoning: the request is valid.",
        "signature": ""}  # fmt: skip


def test_scripted_directives_drive_a_multi_turn_loop() -> None:
    ask = user('Go. [[tool_use Bash {"command": "ls"}]] [[tool_use Read {"file_path": "a"}]]')
    history: list[dict[str, Any]] = [ask]
    names = []
    for _ in range(3):
        message = post("anthropic", request(*history, tools=[READ])).json()
        history.append(assistant(*message["content"]))
        if message["stop_reason"] != "tool_use":
            break
        block = message["content"][-1]
        names.append((block["name"], block["input"]))
        history.append(users(result(block["id"], "out")))
    assert names == [("Bash", {"command": "ls"}), ("Read", {"file_path": "a"})]
    assert history[-1]["content"][-1]["text"] == "The tool returned: out"


def test_stream_follows_anthropics_event_sequence() -> None:
    switch = {"type": "enabled", "budget_tokens": 2048}
    payload = request(user(ASK_READ), tools=[READ], thinking=switch, stream=True)
    response = post("anthropic", payload)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    events = events_of(response.text)
    kinds = [kind for kind, _ in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert kinds[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["content"] == []
    assert start["stop_reason"] is None
    deltas = [(p["index"], p["delta"]["type"]) for k, p in events if k == "content_block_delta"]
    assert deltas[-1] == (1, "input_json_delta")
    assert (0, "signature_delta") in deltas
    assert deltas.index((0, "signature_delta")) == max(i for i, d in enumerate(deltas) if d[0] == 0)
    stops = [p["index"] for k, p in events if k == "content_block_stop"]
    assert stops == [0, 1]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    whole = post("anthropic", {**payload, "stream": False}).json()
    streamed = "".join(p["delta"]["partial_json"] for k, p in events
                       if k == "content_block_delta" and p["index"] == 1)  # fmt: skip
    assert json.loads(streamed) == whole["content"][1]["input"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_refusal_reaches_the_client_with_status_and_headers(provider: str) -> None:
    response = post(provider, request(*[user(), assistant(use())], user("x"), provider=provider))
    assert response.status_code == 400
    rejection = validate_messages(provider, request(user(), assistant(use()), user("x"),
                                                    provider=provider))  # fmt: skip
    assert rejection is not None
    assert response.content == rejection.body
    if provider == "anthropic":
        assert response.headers["request-id"] == response.json()["request_id"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_count_tokens_needs_no_max_tokens(provider: str) -> None:
    payload = request(user(), provider=provider)
    del payload["max_tokens"]
    path = MESSAGES_PREFIXES[provider][0] + "/messages/count_tokens"
    response = post(provider, payload, path)
    assert response.status_code == 200
    assert response.json()["input_tokens"] > 0
    broken = post(provider, {**payload, "messages": [user(), users(result())]}, path)
    assert broken.status_code == 400


def test_forced_status_unknown_path_and_bad_json() -> None:
    forced = post("anthropic", request(user()), **{"x-emulator-status": "529"})
    assert forced.status_code == 529
    assert forced.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert forced.headers["retry-after"] == "1"
    assert post("anthropic", b"{nope").json()["error"]["type"] == "invalid_request_error"
    missing = send(create_emulator_app("anthropic"), "POST", "/v1/nothing")
    assert missing.status_code == 404
    assert missing.json()["type"] == "error"
    models = send(create_emulator_app("anthropic"), "GET", "/v1/models").json()
    assert models["data"][0]["type"] == "model"


def test_emulate_command_offers_the_messages_providers() -> None:
    for provider in PROVIDERS:
        assert _parser().parse_args(["emulate", "--provider", provider]).provider == provider


#: The chat endpoints of GLM, MiniMax and Anthropic: pairing refused in each one's words.
CHAT_TEXTS = {
    "glm": "messages 参数非法。请检查文档。",
    "minimax": "invalid params, tool call result does not follow tool call (2013)",
    "anthropic": "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
    "after: call_1. Each `tool_use` block must have a corresponding `tool_result` block in the "
    "next message.",
}


@pytest.mark.parametrize("provider", sorted(CHAT_TEXTS))
def test_chat_emulators_pair_calls(provider: str) -> None:
    broken = body(chat_user(), asks(call("1")), chat_user("and?"), model="m")
    rejection = validate(provider, broken)
    assert rejection is not None
    assert rejection.message == CHAT_TEXTS[provider]
    assert validate(provider, body(chat_user(), asks(call("1")), chat_result("1"))) is None
    app = create_emulator_app(provider)
    response = send(app, "POST", PREFIXES[provider][0] + "/chat/completions",
                    json=body(chat_user(), model="m"))  # fmt: skip
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["role"] == "assistant"
    assert send(app, "POST", PREFIXES[provider][0] + "/chat/completions", json=broken).json()


def test_anthropic_threads_hold_the_history_between_turns() -> None:
    """The SDK's threaded turns send only the new messages after ``previous_message_id``."""
    app = create_emulator_app("anthropic")
    path = "/v1/messages"
    first = request(user(), tools=[READ], thread={"type": "create"}, tool_choice={"type": "any"})
    answer = send(app, "POST", path, json=first).json()
    [call_block] = [b for b in answer["content"] if b["type"] == "tool_use"]
    follow = request(users(result(call_block["id"])), tools=[READ])
    follow["thread"] = {"type": "continue", "previous_message_id": answer["id"]}
    final = send(app, "POST", path, json=follow)
    assert final.status_code == 200
    assert final.json()["content"][-1]["text"] == "The tool returned: x = 1"
    lost = {**follow, "thread": {"type": "continue", "previous_message_id": "msg_gone"}}
    refused = send(app, "POST", path, json=lost)
    assert refused.status_code == 400
    assert refused.json()["error"]["details"] == {"error_code": "thread_not_found"}
    assert send(create_emulator_app("anthropic"), "POST", path, json=follow).status_code == 400


def test_cli_emulate_prints_the_anthropic_base_url_and_serves_messages() -> None:
    """``toolcall-guard emulate --provider deepseek`` names the ``ANTHROPIC_BASE_URL`` to use."""
    with socket.socket() as probe:  # a free port (released just before the child binds it)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "proxy", "emulate", "--provider", "deepseek"]
    with subprocess.Popen(
        [*command, "--port", str(port)], stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == f"emulating deepseek at http://127.0.0.1:{port}/v1\n"
            root = f"http://127.0.0.1:{port}/anthropic"
            assert child.stdout.readline() == (
                f"Messages API at {root}/v1/messages (ANTHROPIC_BASE_URL={root})\n"
            )
            payload = request(user("hello"), provider="deepseek")
            answer = _post_when_up(root + "/v1/messages", payload, deadline=20)
            assert answer["content"][-1]["text"] == "Emulated deepseek answer to: hello"
        finally:
            child.terminate()
            child.wait(10)


def _post_when_up(url: str, payload: Any, deadline: float) -> Any:
    end = time.monotonic() + deadline
    while True:
        try:
            return httpx.post(url, json=payload, timeout=2).json()
        except httpx.TransportError:
            assert time.monotonic() < end, "the emulator did not start"
            time.sleep(0.05)


def test_stream_knobs_cut_with_an_error_event_or_add_an_unknown_one() -> None:
    payload = request(user(), stream=True)
    cut = post("anthropic", payload, **{"x-emulator-stream-error": "overloaded_error"})
    assert cut.status_code == 200
    assert [kind for kind, _ in events_of(cut.text)] == ["message_start", "error"]
    assert events_of(cut.text)[-1][1]["error"] == {
        "type": "overloaded_error", "message": "Overloaded"}  # fmt: skip
    extra = post("anthropic", payload, **{"x-emulator-stream-extra": "1"})
    kinds = [kind for kind, _ in events_of(extra.text)]
    assert kinds[:2] == ["message_start", "emulator_future_event"]
    assert kinds[-1] == "message_stop"


def test_unscripted_agent_turn_gets_a_text_echoing_its_question() -> None:
    """Claude Code's turn without directives: its tools are not called (auto), and the echo is
    of its question, not of the ``<system-reminder>`` blocks before it."""
    ask = users({"type": "text", "text": "<system-reminder>\nTools: Agent\n</system-reminder>"},
                {"type": "text", "text": "Say hi."})  # fmt: skip
    message = post("anthropic", request(ask, tools=[READ])).json()
    assert message["stop_reason"] == "end_turn"
    assert message["content"] == [{"type": "text", "text": "Emulated anthropic answer to: Say hi."}]


AGENTS = (
    "<system-reminder>\nAvailable agent types for the Agent tool: general-purpose\n"
    "</system-reminder>"
)


@pytest.mark.parametrize(
    "messages",
    [
        # Claude Code's prompt between its reminders, in one message
        [
            users(
                text("<system-reminder>\nContext\n</system-reminder>"),
                text("Say hello"),
                text(AGENTS),
            )
        ],
        # a reminder and the prompt in one text block; an unclosed reminder after it
        [users(text(f"{AGENTS}\nSay hello\n<system-reminder>cut"))],
        # the reminders in a user message of their own after the prompt's
        [users(text("Say hello")), assistant(text("Hi.")), users(text(AGENTS))],
    ],
    ids=["blocks-around", "one-block", "message-after"],
)
def test_the_answer_quotes_the_prompt_not_a_system_reminder(messages: list[Any]) -> None:
    """``claude -p "Say hello"`` is answered to "Say hello", not to the agent types it injects
    (issue 37 item 5)."""
    message = post("anthropic", request(*messages)).json()
    assert message["content"] == [
        {"type": "text", "text": "Emulated anthropic answer to: Say hello"}
    ], message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_directives_joined_by_ampersand_are_one_parallel_round(provider: str) -> None:
    ask = user('Go. [[tool_use read_file {"path": "a"}]] & [[tool_use read_file {"path": "b"}]]'
               ' [[tool_use read_file {"path": "c"}]]')  # fmt: skip
    first = post(provider, request(ask, tools=[READ], provider=provider)).json()
    calls = [b for b in first["content"] if b["type"] == "tool_use"]
    assert [c["input"] for c in calls] == [{"path": "a"}, {"path": "b"}]
    assert len({c["id"] for c in calls}) == 2
    answered = users(*[result(c["id"]) for c in calls])
    history = [ask, assistant(*first["content"]), answered]
    assert validate_messages(provider, request(*history, provider=provider)) is None
    second = post(provider, request(*history, tools=[READ], provider=provider)).json()
    assert [b["input"] for b in second["content"] if b["type"] == "tool_use"] == [{"path": "c"}]
