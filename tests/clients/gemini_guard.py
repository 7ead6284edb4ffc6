"""The proxy in front of the native Gemini emulators, for the Gemini-API client suites (issue 33).

Same oracle as the chat and Messages suites (tests/clients/conftest.py): the proxy sits behind a
`Tap` that records each request body as it came off the client's socket; the strict emulators
of AI Studio, Vertex AI and Code Assist (proxy/emulator/gemini_native.py, written apart from the
sanitizer) record what they received. A valid history is ``clean`` and reaches the emulator
byte for byte; a broken one is refused by the emulator as sent, ``repaired`` by the proxy and
answered 200; every answer reaches the client as the emulator sent it.

Each upstream forwards the native paths to its ``gemini_base_url`` (the emulator's root):
``gemini`` takes ``gemini-*`` models on AI Studio's paths, ``vertex`` and ``code-assist`` are
reached by their paths' shapes. Clients use the proxy's root as ``GOOGLE_GEMINI_BASE_URL`` and
send ``offline`` as their key: the proxy holds none, so it passes through.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson
import pytest

from proxy.app import create_app
from proxy.emulator import ReceivedRequest, create_gemini_native_app
from proxy.emulator.gemini_native_answer import (
    plan_reply,
    reply_body,
    stream_chunks,
    stream_frames,
)
from proxy.emulator.gemini_native_rules import validate_native
from proxy.emulator.gemini_native_schema import parse_rejection, wrapper_errors
from proxy.settings import load_settings
from tests.clients.conftest import TAP_HEADER, Exchange, Guard, Tap
from tests.conftest import _PROVIDER_VARIABLES
from tests.e2e.conftest import Upstream
from tests.servers import running

#: The models the clients are tried on: Gemini 2.5 (signatures optional) and Gemini 3 (the
#: emulator signs the first call of each step and refuses a step whose first call lost it, N5).
GEMINI_MODELS = ("gemini-2.5-flash", "gemini-3-pro-preview")
#: The upstream each emulator is configured as, by endpoint (gemini_native_errors.ENDPOINTS).
UPSTREAMS = {"aistudio": "gemini", "vertex": "vertex", "code-assist": "code-assist"}
#: What the clients send as their key (``GEMINI_API_KEY``, ``api_key``).
CLIENT_KEY = "offline"
#: The methods whose body carries a history the proxy checks.
CHECKED = (":generateContent", ":streamGenerateContent")
_VERTEX_PATH = re.compile(r"/publishers/google/models/([^/:]+):")
_STUDIO_PATH = re.compile(r"/models/([^/:]+):")


def endpoint_of(path: str) -> str:
    """Which endpoint's shape a native request path has (after an optional prefix)."""
    if "/v1internal:" in path:
        return "code-assist"
    return "vertex" if _VERTEX_PATH.search(path) else "aistudio"


def model_of(path: str, body: Any) -> str:
    """The model a request names: in its path, or Code Assist's body."""
    found = _VERTEX_PATH.search(path) or _STUDIO_PATH.search(path)
    if found is not None:
        return found.group(1)
    model = body.get("model") if isinstance(body, dict) else None
    return str(model or "").removeprefix("models/")


def emulator_verdict(path: str, raw: bytes) -> str | None:
    """The emulator's own verdict on ``raw`` sent to ``path``: None, or the row it breaks
    (the checks the emulator's `GeminiNativeApp` runs on a ``generateContent`` body)."""
    endpoint, body = endpoint_of(path), orjson.loads(raw)
    inner, root = body, ""
    if endpoint == "code-assist":
        rejection = parse_rejection(endpoint, wrapper_errors(body))
        if rejection is not None:
            return rejection.rule
        inner, root = body.get("request"), "request"
    rejection = validate_native(endpoint, model_of(path, body), inner, None, root)
    return None if rejection is None else rejection.rule


def emulator_answer(path: str, raw: bytes, sse: bool) -> bytes:
    """The bytes the emulator answers a valid ``raw`` with (a body, or its whole stream)."""
    endpoint, body = endpoint_of(path), orjson.loads(raw)
    inner = body.get("request") if endpoint == "code-assist" else body
    plan = plan_reply(endpoint, model_of(path, body), inner, raw)
    if path.endswith(":streamGenerateContent"):
        return b"".join(stream_frames(stream_chunks(plan, None), sse, None))
    return reply_body(plan)


class GeminiGuard(Guard):
    """`Guard` for Gemini's native paths: verdicts and answers come from the emulators. The
    ``model`` argument of the assertions is kept for `Guard`'s signature; each request's own
    path (or Code Assist body) names its model."""

    @property
    def base_url(self) -> str:
        return self.url

    def chats(self) -> list[Exchange]:
        """The ``generateContent`` and ``streamGenerateContent`` requests since the reset."""
        return [e for e in self.tap.exchanges if e.path.endswith(CHECKED)]

    def side_requests(self) -> list[Exchange]:
        """Every other request (``countTokens``, model listing, Code Assist's setup calls)."""
        return [e for e in self.tap.exchanges if not e.path.endswith(CHECKED)]

    def verdict(self, model: str, exchange: Exchange) -> str | None:
        return emulator_verdict(exchange.path, exchange.body)

    def attempts(self, model: str, exchange: Exchange) -> list[bytes]:
        received = self.upstreams[UPSTREAMS[endpoint_of(exchange.path)]].received
        return [
            r.body
            for r in received
            if r.path.endswith(CHECKED) and r.headers.get(TAP_HEADER) == exchange.mark
        ]

    def assert_relayed(self, model: str = "") -> None:
        """Every answer reached the client as the emulator sent it (byte for byte)."""
        for k, exchange in enumerate(self.chats()):
            sent = (self.attempts(model, exchange) or [exchange.body])[-1]
            sse = exchange.headers.get("content-type", "").startswith("text/event-stream")
            expected = emulator_answer(exchange.path, sent, sse)
            assert exchange.answer == expected, f"answer {k} was not relayed unchanged"

    def scenario(self, name: str | None = None) -> GeminiGuard:
        frozen = super().scenario(name)
        return GeminiGuard(frozen.url, frozen.tap, frozen.upstreams)


def start_gemini_guard(empty_config: Path) -> Iterator[GeminiGuard]:
    """The AI Studio, Vertex and Code Assist emulators and a proxy in front of them (a session
    fixture's body)."""
    with ExitStack() as stack, pytest.MonkeyPatch.context() as env:
        for name in list(os.environ):
            variable = name.startswith(("TOOLCALL_GUARD_", "GOOGLE_", "GEMINI_"))
            if variable or name in _PROVIDER_VARIABLES:
                env.delenv(name)
        env.setenv("TOOLCALL_GUARD_CONFIG", str(empty_config))
        upstreams: dict[str, Upstream] = {}
        settings: dict[str, dict[str, object]] = {}
        for endpoint, upstream in UPSTREAMS.items():
            received: list[ReceivedRequest] = []
            app = create_gemini_native_app(endpoint, received=received)
            root = stack.enter_context(running(app))
            upstreams[upstream] = Upstream(upstream, root, received)
            settings[upstream] = {
                "gemini_base_url": root,
                "models": ["gemini-*"] if upstream == "gemini" else [],
                "api_key_env": None,
            }
        # The built-in routing: the default is an OpenAI-compatible upstream serving no native
        # API (never reached here: a native path names a model, or goes to an upstream that
        # serves the API).
        settings["openai"] = {"base_url": f"{upstreams['gemini'].url}/v1", "api_key_env": None}
        repair_log = {"url": "memory://", "flush_interval": 0.05}
        routing = {"default": "openai"}
        proxy = load_settings(upstreams=settings, repair_log=repair_log, routing=routing)
        tap = Tap(create_app(proxy))
        yield GeminiGuard(stack.enter_context(running(tap)), tap, upstreams)
