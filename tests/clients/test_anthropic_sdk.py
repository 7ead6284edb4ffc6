"""The ``anthropic`` Python SDK pointed at the proxy (``base_url`` = the proxy's root, as
``ANTHROPIC_BASE_URL``), on the five Messages providers: its own histories are ``clean`` and
forwarded byte for byte, its tool runner's loop too; the broken forms clients produce
(anthropic-messages.md §4) are ``repaired`` and answered 200.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from tests.clients.conftest import TIMEOUT, require
from tests.clients.messages_guard import (
    ASK,
    CLIENT_KEY,
    MESSAGES_MODELS,
    READ_FILE,
    SYSTEM,
    MessagesGuard,
    messages_rules,
)

MODELS = tuple(MESSAGES_MODELS)
parametrize_models = pytest.mark.parametrize("model", MODELS, ids=MODELS)


@pytest.fixture
def client(mguard: MessagesGuard) -> Any:
    anthropic = require("anthropic")
    return anthropic.Anthropic(
        base_url=mguard.url, api_key=CLIENT_KEY, timeout=TIMEOUT, max_retries=0
    )


def ask(client: Any, model: str, messages: list[Any], **extra: Any) -> Any:
    return client.messages.create(
        model=model, max_tokens=1024, system=SYSTEM, tools=[READ_FILE], messages=messages, **extra
    )


def first_round(client: Any, model: str) -> tuple[list[Any], Any]:
    """The question, and the assistant's tool_use answer as the SDK returns it."""
    messages: list[Any] = [{"role": "user", "content": ASK}]
    answer = ask(client, model, messages)
    assert answer.stop_reason == "tool_use"
    messages.append({"role": "assistant", "content": answer.content})
    return messages, next(b for b in answer.content if b.type == "tool_use")


@parametrize_models
def test_tool_loop_is_clean(client: Any, mguard: MessagesGuard, model: str) -> None:
    messages, use = first_round(client, model)
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": use.id, "content": "x = 1"}]})  # fmt: skip
    final = ask(client, model, messages)
    assert final.stop_reason == "end_turn"
    assert final.content[-1].text == "The tool returned: x = 1"
    mguard.assert_clean(model, 2)


@parametrize_models
def test_streamed_tool_loop_is_clean(client: Any, mguard: MessagesGuard, model: str) -> None:
    messages: list[Any] = [{"role": "user", "content": ASK}]
    for _ in range(2):
        with client.messages.stream(
            model=model, max_tokens=1024, system=SYSTEM, tools=[READ_FILE], messages=messages
        ) as stream:
            answer = stream.get_final_message()
        messages.append({"role": "assistant", "content": answer.content})
        uses = [b for b in answer.content if b.type == "tool_use"]
        if not uses:
            break
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": uses[0].id, "content": "x = 1"}]})  # fmt: skip
    assert answer.content[-1].text == "The tool returned: x = 1"
    mguard.assert_clean(model, 2)


@parametrize_models
def test_tool_runner_loop_is_clean(client: Any, mguard: MessagesGuard, model: str) -> None:
    anthropic = require("anthropic")
    if not hasattr(client.beta.messages, "tool_runner"):
        pytest.skip(f"anthropic {anthropic.__version__} has no tool runner")

    @anthropic.beta_tool
    def read_file(path: str) -> str:
        """Read a file of the project.

        Args:
            path: the file's path.
        """
        return f"{path}: x = 1"

    # thread=False: the full history in every request. By default (anthropic >= 2.x) the runner
    # opens a server-side thread (beta message-threads-2026-08-12) and sends only the new
    # messages, a partial history no guard can judge (tested apart below).
    runner = client.beta.messages.tool_runner(
        model=model,
        max_tokens=1024,
        tools=[read_file],
        messages=[{"role": "user", "content": ASK}],
        **_unthreaded(client),
    )
    final = runner.until_done()
    assert final.content[-1].text == "The tool returned: config.py: x = 1"
    mguard.assert_clean(model, 2)


def test_threaded_tool_runner_is_forwarded_untouched(client: Any, mguard: MessagesGuard) -> None:
    """The runner's default: a server-side thread (beta ``message-threads-2026-08-12``), each
    later turn sending only its new messages (a ``tool_result`` whose ``tool_use`` the server
    holds). The proxy cannot see the held part, so it must forward such a turn as sent."""
    anthropic = require("anthropic")
    if "thread" not in inspect.signature(client.beta.messages.tool_runner).parameters:
        pytest.skip(f"anthropic {anthropic.__version__} has no threaded tool runner")

    @anthropic.beta_tool
    def read_file(path: str) -> str:
        """Read a file of the project.

        Args:
            path: the file's path.
        """
        return f"{path}: x = 1"

    model = "claude-sonnet-4-6"
    runner = client.beta.messages.tool_runner(
        model=model, max_tokens=1024, tools=[read_file], messages=[{"role": "user", "content": ASK}]
    )
    assert runner.until_done().content[-1].text == "The tool returned: config.py: x = 1"
    sent = mguard.chats()
    assert [b'"continue"' in e.body for e in sent] == [False, True], "not a threaded loop"
    for exchange in sent:
        assert exchange.status == 200, exchange.describe()
        assert exchange.outcome == "clean", exchange.describe()
        assert mguard.attempts(model, exchange) == [exchange.body]


def _unthreaded(client: Any) -> dict[str, Any]:
    """``thread=False`` where the SDK's runner has server-side threads."""
    accepts = inspect.signature(client.beta.messages.tool_runner).parameters
    return {"thread": False} if "thread" in accepts else {}


def _require_repairs() -> None:
    if not messages_rules():
        pytest.skip("the proxy has no Messages rules yet (issue 21 item 2)")


@parametrize_models
def test_interrupted_tool_call_is_repaired(client: Any, mguard: MessagesGuard, model: str) -> None:
    """Claude Code after an interrupt or --resume: the tool_use got no result (M1)."""
    _require_repairs()
    messages, _ = first_round(client, model)
    messages.append({"role": "user", "content": "Never mind, just say hi."})
    assert ask(client, model, messages).stop_reason == "end_turn"
    mguard.assert_outcomes(model, ["clean", "repaired"])


@parametrize_models
def test_compacted_orphan_result_is_repaired(
    client: Any, mguard: MessagesGuard, model: str
) -> None:
    """After compaction the tool_use is summarized away, its result stays (M2)."""
    _require_repairs()
    messages = [
        {"role": "user", "content": "Summary: we were reading config.py."},
        {"role": "assistant", "content": "I read it."},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01Gone", "content": "x = 1"},
            {"type": "text", "text": "Go on."}]},
    ]  # fmt: skip
    ask(client, model, messages)
    mguard.assert_repaired(model)


SYSTEM_REFUSED = ("claude-sonnet-4-6", "deepseek-chat", "glm-4.6", "MiniMax-M2")


@pytest.mark.parametrize("model", SYSTEM_REFUSED, ids=SYSTEM_REFUSED)
def test_system_message_is_repaired_where_refused(
    client: Any, mguard: MessagesGuard, model: str
) -> None:
    """Claude Code >= 2.1.154 sends a ``role: system`` message (M24)."""
    _require_repairs()
    messages = [
        {"role": "user", "content": "Hello."},
        {"role": "system", "content": "The user's timezone is UTC."},
    ]
    ask(client, model, messages)
    mguard.assert_repaired(model)


@parametrize_models
def test_count_tokens_reaches_the_providers_emulator(
    client: Any, mguard: MessagesGuard, model: str
) -> None:
    """``client.messages.count_tokens`` (``POST /v1/messages/count_tokens``) is routed by its
    model like ``/v1/messages`` and forwarded as sent."""
    messages = [{"role": "user", "content": ASK}]
    counted = client.messages.count_tokens(
        model=model, system=SYSTEM, tools=[READ_FILE], messages=messages
    )
    assert counted.input_tokens > 0
    [exchange] = mguard.tap.exchanges
    assert exchange.path == "/v1/messages/count_tokens"
    received = mguard.upstreams[MESSAGES_MODELS[model]].received
    assert [r.body for r in received if r.path.endswith("/count_tokens")] == [exchange.body]


def _use(id_: str, name: str = "read_file") -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": {"path": "config.py"}}


def _result(id_: str, content: str = "x = 1") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": content}


def _turns(*contents: Any) -> list[dict[str, Any]]:
    """Alternating user/assistant messages, starting with the user."""
    return [{"role": ("user", "assistant")[k % 2], "content": c} for k, c in enumerate(contents)]


#: Broken forms of anthropic-messages.md §4, each sent by the SDK to the provider that refuses it.
BROKEN: dict[str, tuple[str, list[dict[str, Any]], dict[str, Any]]] = {
    # relays re-serializing transcripts lose signatures (CLIProxyAPI#2172; M18)
    "unsigned-thinking": ("claude-sonnet-4-6", _turns(
        "Read config.py.", [{"type": "thinking", "thinking": "Read it.", "signature": ""},
                            _use("toolu_01A")], [_result("toolu_01A")]),
        {"thinking": {"type": "enabled", "budget_tokens": 2048}}),
    # opencode / Roo: an empty text block, a duplicated result (M11, M4)
    "empty-text": ("claude-sonnet-4-6", _turns([{"type": "text", "text": ""},
                                                {"type": "text", "text": "Hi."}]), {}),
    "duplicate-result": ("claude-sonnet-4-6", _turns(
        "Read config.py.", [_use("toolu_01A")], [_result("toolu_01A"), _result("toolu_01A")]), {}),
    # Kimi's ids replayed to Claude (langchain_anthropic's id middleware; M7)
    "kimi-ids-to-claude": ("claude-sonnet-4-6", _turns(
        "Read config.py.", [_use("functions.read_file:0")], [_result("functions.read_file:0")]),
        {}),
    # LiteLLM reusing ids across rounds (trycua/cua#524; M5 on Anthropic)
    "reused-ids": ("claude-sonnet-4-6", _turns(
        "Read config.py.", [_use("toolu_01A")], [_result("toolu_01A")], [_use("toolu_01A")],
        [_result("toolu_01A")]), {}),
    # results of one turn split over two user messages (AstrBot#7871; M6 on DeepSeek)
    "split-results": ("deepseek-chat", [
        *_turns("Read both.", [_use("toolu_a"), _use("toolu_b")], [_result("toolu_a")]),
        {"role": "user", "content": [_result("toolu_b")]}], {"thinking": {"type": "disabled"}}),
    # Claude Code's ToolSearch result sent to Kimi (Kimi-K2#118; M23)
    "tool-reference-to-kimi": ("kimi-k2-0905-preview", _turns(
        "Find a tool.", [_use("toolu_01A", "ToolSearch")],
        [{"type": "tool_result", "tool_use_id": "toolu_01A",
          "content": [{"type": "tool_reference", "tool_name": "read_file"}]}]), {}),
}  # fmt: skip


@pytest.mark.parametrize("case", BROKEN, ids=list(BROKEN))
def test_known_broken_forms_are_repaired(client: Any, mguard: MessagesGuard, case: str) -> None:
    _require_repairs()
    model, messages, extra = BROKEN[case]
    ask(client, model, messages, **extra)
    mguard.assert_repaired(model)
