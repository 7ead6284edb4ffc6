"""The proxy in front of the five Messages emulators, for the Anthropic-API client suites.

Same oracle as the chat suites (tests/clients/conftest.py): the proxy sits behind a `Tap` that
records each request body as it came off the client's socket; the emulators (written apart from
the sanitizer) record what they received. A valid history is ``clean`` and reaches the emulator
byte for byte; a broken one is refused by the emulator as sent, ``repaired`` by the proxy and
answered 200.

Each upstream is routed by its model glob and forwards ``POST /v1/messages`` to its
``anthropic_base_url`` (the emulator's own Messages path). Clients use the proxy's root URL as
their base URL, as Claude Code uses ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import orjson
import pytest

from proxy.app import create_app
from proxy.emulator import ReceivedRequest, create_emulator_app
from proxy.emulator.app import PREFIXES
from proxy.emulator.messages import MESSAGES_PREFIXES, messages_reply, validate_messages
from proxy.settings import UpstreamSettings, load_settings
from tests.clients.conftest import TAP_HEADER, Exchange, Guard, Tap
from tests.conftest import _PROVIDER_VARIABLES
from tests.e2e.conftest import Upstream
from tests.servers import running

#: One model per Messages provider, and the emulator each is routed to.
MESSAGES_MODELS = {
    "claude-sonnet-4-6": "anthropic",
    "deepseek-chat": "deepseek",
    "kimi-k2-0905-preview": "kimi",
    "glm-4.6": "glm",
    "MiniMax-M2": "minimax",
}
GLOBS = {
    "anthropic": ["claude-*"],
    "deepseek": ["deepseek-*"],
    "kimi": ["kimi-*"],
    "glm": ["glm-*"],
    "minimax": ["MiniMax-*"],
}
#: What the clients send as their key: the proxy holds none, so it passes through.
CLIENT_KEY = "sk-offline"
#: The tool every scenario declares, as Anthropic's API takes it.
READ_FILE = {
    "name": "read_file",
    "description": "Read a file of the project.",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
#: The opening question; its directive makes every emulator call read_file once.
ASK = 'Read config.py. [[tool_use read_file {"path": "config.py"}]]'
SYSTEM = "You are a coding agent."


class MessagesGuard(Guard):
    """`Guard` for ``/v1/messages``: its verdicts come from the Messages emulators."""

    @property
    def base_url(self) -> str:
        return self.url

    def chats(self) -> list[Exchange]:
        return [e for e in self.tap.exchanges if e.path.endswith("/messages")]

    def verdict(self, model: str, exchange: Exchange) -> str | None:
        provider = MESSAGES_MODELS[model]
        rejection = validate_messages(provider, orjson.loads(exchange.body), exchange.body)
        return None if rejection is None else rejection.rule

    def attempts(self, model: str, exchange: Exchange) -> list[bytes]:
        received = self.upstreams[MESSAGES_MODELS[model]].received
        return [
            r.body
            for r in received
            if r.path.endswith("/messages") and r.headers.get(TAP_HEADER) == exchange.mark
        ]

    def assert_relayed(self, model: str) -> None:
        """Every answer reached the client as the emulator sent it (byte for byte)."""
        provider = MESSAGES_MODELS[model]
        for k, exchange in enumerate(self.chats()):
            sent = (self.attempts(model, exchange) or [exchange.body])[-1]
            reply = messages_reply(provider, sent, None)
            expected = b"".join(reply) if isinstance(reply, list) else reply
            assert isinstance(expected, bytes), f"request {k} was refused by the emulator"
            assert exchange.answer == expected, f"answer {k} was not relayed unchanged"

    def scenario(self, name: str | None = None) -> MessagesGuard:
        frozen = super().scenario(name)
        return MessagesGuard(frozen.url, frozen.tap, frozen.upstreams)


def seam_missing() -> str | None:
    """Why the proxy cannot guard ``/v1/messages`` yet, or None (issue 21 items 1 and 3)."""
    if "anthropic_base_url" not in UpstreamSettings.model_fields:
        return "the proxy has no anthropic_base_url setting yet (issue 21 item 3)"
    return None


def messages_rules() -> set[str]:
    """The names of the Messages rules the proxy has (issue 21 item 2 lands them in batches)."""
    from proxy.core.registry import PIPELINES

    return {rule.name for rule in PIPELINES.get("messages", ())}


def start_messages_guard(empty_config: Path) -> Iterator[MessagesGuard]:
    """The five Messages emulators and a proxy in front of them (a session fixture's body)."""
    reason = seam_missing()
    if reason is not None:
        pytest.skip(reason)
    with ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        for name in list(os.environ):
            variable = name.startswith(("TOOLCALL_GUARD_", "ANTHROPIC_"))
            if variable or name in _PROVIDER_VARIABLES:
                env.delenv(name)
        env.setenv("TOOLCALL_GUARD_CONFIG", str(empty_config))
        upstreams: dict[str, Upstream] = {}
        settings: dict[str, dict[str, object]] = {}
        for provider in MESSAGES_PREFIXES:
            received: list[ReceivedRequest] = []
            url = stack.enter_context(running(create_emulator_app(provider, received=received)))
            messages_url = url + MESSAGES_PREFIXES[provider][0]
            upstreams[provider] = Upstream(provider, messages_url, received)
            settings[provider] = {
                "base_url": url + PREFIXES[provider][0],
                "anthropic_base_url": messages_url,
                "models": GLOBS[provider],
                "api_key_env": None,
            }
        repair_log = {"url": "memory://", "flush_interval": 0.05}
        routing = {"default": "anthropic"}
        proxy = load_settings(upstreams=settings, repair_log=repair_log, routing=routing)
        tap = Tap(create_app(proxy))
        yield MessagesGuard(stack.enter_context(running(tap)), tap, upstreams)
