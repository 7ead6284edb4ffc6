"""One proxy and the strict emulators for the whole session, and a tap that proves byte identity.

Real client libraries (the openai SDK, LangChain, the Agents SDK, pydantic-ai, LiteLLM, the
Vercel AI SDK) build histories with their own types and serializers and send them to the proxy
over a real socket; the proxy forwards to the emulators for openai, deepseek and gemini. The
Anthropic-API clients use ``mguard`` (messages_guard.py), Gemini's native clients (google-genai,
ADK, LangChain's ChatGoogleGenerativeAI, @google/genai, gemini-cli) ``gguard`` (gemini_guard.py).

How byte identity is proven: the proxy app is wrapped in :class:`Tap`, a raw ASGI layer that
records each request body exactly as uvicorn read it off the client's socket (before any proxy
code runs) and the status and headers of the answer. The emulators record the bodies they
received. A valid history must come out with ``x-toolcall-guard-outcome: clean`` and the
emulator's bytes equal to the tap's bytes. This works the same for every library, Node
included, and does not trust the proxy's own account of what it received.

A library that cannot be imported is skipped with the reason, except under ``CI=true``, where
it is a failure (the ``clients`` extra installs them all).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, MutableMapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from proxy.app import create_app
from proxy.emulator import ReceivedRequest, create_emulator_app, validate
from tests.conftest import _PROVIDER_VARIABLES
from tests.e2e.conftest import PREFIX, Upstream, proxy_settings
from tests.servers import running

#: The five models every library is tried on, and the emulator each one is routed to.
MODELS = {
    "gpt-4o": "openai",
    "deepseek-chat": "deepseek",
    "deepseek-reasoner": "deepseek",
    "gemini-2.5-flash": "gemini",
    "gemini-3-pro-preview": "gemini",
}
#: Short client timeouts: every answer comes from a loopback emulator within milliseconds.
TIMEOUT = 10.0
OUTCOME = "x-toolcall-guard-outcome"
TAP_HEADER = "x-clients-tap"


def require(module: str) -> ModuleType:
    """Import a client library; skip (fail under CI=true) when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{module} is required under CI=true (the `clients` extra): {error}")
        pytest.skip(f"{module} is not installed (pip install -e '.[clients]'): {error}")


@dataclass
class Exchange:
    """One request as the client sent it to the proxy, and the answer's status line."""

    method: str
    path: str
    chunks: list[bytes] = field(default_factory=list)
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    answer: bytes = b""  # the response body (its first MiB): relayed answers are compared
    mark: str = ""  # the value of TAP_HEADER on the attempts forwarded for this request
    request_headers: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        rules = self.headers.get("x-toolcall-guard-rules")
        return f"{self.status} {self.outcome} rules={rules} answer={self.answer[:160]!r}"

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def outcome(self) -> str | None:
        return self.headers.get(OUTCOME)


Scope = MutableMapping[str, Any]


class Tap:
    """ASGI wrapper recording request bodies off the socket and response status and headers."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.exchanges: list[Exchange] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = Exchange(scope["method"], scope["path"], request_headers=_headers(scope))
        self.exchanges.append(exchange)
        # A header (never the body) ties each upstream attempt to this exchange: with repair on
        # reject, one request can reach the emulator twice.
        mark = (TAP_HEADER.encode(), str(len(self.exchanges)).encode())
        exchange.mark = mark[1].decode()
        scope = {**scope, "headers": [*scope["headers"], mark]}

        async def tapped_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                exchange.chunks.append(message.get("body", b""))
            return message

        async def tapped_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
                exchange.headers = _headers(message)
            elif message["type"] == "http.response.body" and len(exchange.answer) < 1 << 20:
                exchange.answer += message.get("body", b"")
            await send(message)

        await self.app(scope, tapped_receive, tapped_send)


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


@dataclass
class Guard:
    """The session's proxy (behind its tap) and emulators."""

    url: str
    tap: Tap
    upstreams: dict[str, Upstream]

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def reset(self) -> None:
        self.tap.exchanges.clear()
        for upstream in self.upstreams.values():
            upstream.received.clear()

    def scenario(self, name: str | None = None) -> Guard:
        """A frozen copy of what the requests met: all, or those with ``x-scenario: name``."""
        tap = Tap(None)
        tap.exchanges = [
            e
            for e in self.tap.exchanges
            if name is None or e.request_headers.get("x-scenario") == name
        ]
        upstreams = {
            key: Upstream(u.provider, u.url, list(u.received)) for key, u in self.upstreams.items()
        }
        return Guard(self.url, tap, upstreams)

    def chats(self) -> list[Exchange]:
        """The chat-completions requests the clients sent since the last reset."""
        return [e for e in self.tap.exchanges if e.path.endswith("/chat/completions")]

    def verdict(self, model: str, exchange: Exchange) -> str | None:
        """The emulator's own verdict on the bytes the client sent: None, or the row it breaks.

        This is the oracle: the emulators are written apart from the sanitizer, so a request
        they accept as sent must not be touched, and one they reject must be repaired.
        """
        rejection = validate(MODELS[model], orjson.loads(exchange.body), raw=exchange.body)
        return None if rejection is None else rejection.rule

    def attempts(self, model: str, exchange: Exchange) -> list[bytes]:
        """The bodies the emulator serving `model` received for `exchange`, in order."""
        received = self.upstreams[MODELS[model]].chats()
        return [r.body for r in received if r.headers.get(TAP_HEADER) == exchange.mark]

    def assert_outcomes(self, model: str, expected: list[str]) -> list[Exchange]:
        """Each chat request met the `expected` outcome (``clean`` or ``repaired``).

        clean: the emulator accepts the bytes as sent, and received exactly those bytes, once.
        repaired: the emulator rejects the bytes as sent, and accepted the repaired ones (the
        answer is a 200; with repair on reject the original may have been tried first).
        """
        sent = self.chats()
        verdicts = [self.verdict(model, e) for e in sent]
        pairs = zip(sent, verdicts, strict=True)
        report = "\n".join(f"emulator={v} {e.describe()}" for e, v in pairs)
        assert [e.outcome for e in sent] == expected, report
        for k, (exchange, verdict) in enumerate(zip(sent, verdicts, strict=True)):
            assert exchange.status == 200, f"request {k}: {exchange.describe()}"
            attempts = self.attempts(model, exchange)
            if exchange.outcome == "clean":
                assert verdict is None, f"request {k}: the emulator rejects it ({verdict})"
                assert attempts == [exchange.body], f"request {k} was not forwarded as sent"
            else:
                assert verdict is not None, f"request {k} was valid as sent, yet rewritten"
                assert attempts, f"request {k} never reached the emulator"
                assert attempts[-1] != exchange.body, f"request {k}: the repair changed nothing"
        return sent

    def assert_clean(self, model: str, requests: int = 1) -> list[Exchange]:
        """All `requests` were clean and forwarded byte for byte."""
        return self.assert_outcomes(model, ["clean"] * requests)

    def assert_repaired(self, model: str, requests: int = 1) -> list[Exchange]:
        """All `requests` were repaired, and the emulator accepted the repaired bodies."""
        return self.assert_outcomes(model, ["repaired"] * requests)


@pytest.fixture(scope="session")
def session_guard(empty_config: Path) -> Iterator[Guard]:
    """The emulators and one proxy in front of them, for the whole session.

    Session fixtures start before the per-test isolation of tests/conftest.py, so this one
    isolates its own settings the same way (no deployment config, no developer overrides).
    """
    with ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        for name in list(os.environ):
            if name.startswith("TOOLCALL_GUARD_") or name in _PROVIDER_VARIABLES:
                env.delenv(name)
        env.setenv("TOOLCALL_GUARD_CONFIG", str(empty_config))
        upstreams: dict[str, Upstream] = {}
        for provider, prefix in PREFIX.items():
            received: list[ReceivedRequest] = []
            app = create_emulator_app(provider, received=received)
            url = stack.enter_context(running(app))
            upstreams[provider] = Upstream(provider, url + prefix, received)
        settings = proxy_settings({name: u.url for name, u in upstreams.items()})
        tap = Tap(create_app(settings))
        yield Guard(stack.enter_context(running(tap)), tap, upstreams)


@pytest.fixture
def guard(session_guard: Guard) -> Guard:
    """The session's proxy with nothing recorded yet."""
    session_guard.reset()
    return session_guard


def parametrize_models(*models: str) -> pytest.MarkDecorator:
    """Parametrize a test over `models` (all five by default), ids = model names."""
    chosen = models or tuple(MODELS)
    return pytest.mark.parametrize("model", chosen, ids=chosen)


def provider_answer(model: str, calls: list[tuple[str, str, str]]) -> dict[str, Any]:
    """A ``chat.completion`` body as `model`'s provider returns parallel `calls` (id, name, args).

    The emulators answer one call at a time; parallel rounds are parsed by each library from
    this body, shaped as the emulator's own answers are (proxy/emulator/completion.py): content
    null, ``reasoning_content`` from DeepSeek's thinking models, Gemini 3's thought signature on
    the first call of the step (provider-rules.md G2: "attached only to the first functionCall").
    """
    tool_calls: list[dict[str, Any]] = [
        {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
        for id_, name, args in calls
    ]
    if model.startswith("gemini-3") and tool_calls:
        signature = {"google": {"thought_signature": "c2lnbmF0dXJlLW9mLXRoZS1zdGVw"}}
        tool_calls[0]["extra_content"] = signature
    message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    if model == "deepseek-reasoner":
        message["reasoning_content"] = "Two files are needed: read both at once."
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}
    return {
        "id": "chatcmpl-parallel",
        "object": "chat.completion",
        "created": 1735689600,
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


#: The tool every scenario declares (JSON schema as the libraries send it).
#: The opening of the agent conversations the message-replaying tests drive.
SYSTEM = {"role": "system", "content": "You are a coding agent."}
ASK = {"role": "user", "content": "Read config.py and app.py."}

READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the project.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}
PARALLEL_CALLS = [
    ("call_a1", "read_file", '{"path": "config.py"}'),
    ("call_b2", "read_file", '{"path": "app.py"}'),
]


@pytest.fixture(scope="session")
def session_messages_guard(empty_config: Path) -> Iterator[Guard]:
    """The five Messages emulators and one proxy in front of them (tests/clients/messages_guard)."""
    from tests.clients.messages_guard import start_messages_guard

    yield from start_messages_guard(empty_config)


@pytest.fixture
def mguard(session_messages_guard: Guard) -> Guard:
    """The Messages proxy with nothing recorded yet."""
    session_messages_guard.reset()
    return session_messages_guard


@pytest.fixture(scope="session")
def session_gemini_guard(empty_config: Path) -> Iterator[Guard]:
    """The native Gemini emulators and one proxy in front of them (tests/clients/gemini_guard)."""
    from tests.clients.gemini_guard import start_gemini_guard

    yield from start_gemini_guard(empty_config)


@pytest.fixture
def gguard(session_gemini_guard: Guard) -> Guard:
    """The Gemini-native proxy with nothing recorded yet."""
    session_gemini_guard.reset()
    return session_gemini_guard


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """On failure, show what each request of the test met at the proxy."""
    report = yield
    funcargs = getattr(item, "funcargs", {})
    guard = funcargs.get("guard") or funcargs.get("mguard") or funcargs.get("gguard")
    if report.failed and isinstance(guard, Guard):
        lines = [f"{e.method} {e.path} -> {e.describe()}" for e in guard.tap.exchanges]
        report.sections.append(("proxy exchanges", "\n".join(lines)))
    return report
