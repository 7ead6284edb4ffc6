"""Any bytes posted to ``/v1/chat/completions``: never a 5xx, never a traceback.

Property-based (hypothesis): random JSON, wrong types at every level, unknown roles, content
parts of every shape, invalid UTF-8, truncated and spliced bodies, through the real app with
the strict OpenAI emulator as its upstream. Every answer is a 2xx from the upstream or a 4xx in
the OpenAI error shape. In process (``httpx.ASGITransport``, fast, a few hundred examples) and
over real sockets (uvicorn on both sides, a smaller sample). Then the extremes one by one (huge,
deep, thousands of tool calls) and each configurable limit at its boundary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, ExitStack
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.app import create_app
from proxy.emulator import create_emulator_app
from tests.e2e.conftest import proxy_settings
from tests.servers import running

Post = Callable[[bytes, dict[str, str]], httpx.Response]

# --- what a client may send ----------------------------------------------------------------

leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
anything = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


@st.composite
def mostly(draw: st.DrawFn, good: st.SearchStrategy[Any], weight: int = 4) -> Any:
    """``good`` most of the time, anything at all (a wrong type) one time in ``weight + 1``."""
    return draw(anything) if draw(st.integers(0, weight)) == weight else draw(good)


def one_of(*values: Any) -> st.SearchStrategy[Any]:
    """One of ``values`` most of the time, anything at all now and then."""
    return mostly(st.sampled_from(values), weight=8)


roles = one_of("user", "assistant", "system", "developer", "tool", "function", "robot", "")
parts = st.fixed_dictionaries(
    {"type": one_of("text", "image_url", "input_audio", "file", "refusal", "video")},
    optional={
        "text": mostly(st.text(max_size=10)),
        "image_url": one_of({"url": "data:image/png;base64,AAAA"}, "http://x/y.png"),
        "input_audio": anything,
        "file": anything,
    },
)
contents = mostly(st.none() | st.text(max_size=30) | st.lists(mostly(parts), max_size=4))
ids = mostly(st.sampled_from(["call_1", "call_2", "call_3", ""]) | st.text(max_size=50))
functions = st.fixed_dictionaries(
    {},
    optional={
        "name": one_of("read_file", "search", "", "a b"),
        "arguments": mostly(st.sampled_from(["{}", '{"a": 1}', "", "not json"])),
    },
)
calls = st.fixed_dictionaries(
    {"id": ids, "function": mostly(functions)},
    optional={"type": one_of("function", "custom"), "index": anything, "extra_content": anything},
)
messages = mostly(
    st.fixed_dictionaries(
        {"role": roles},
        optional={
            "content": contents,
            "tool_calls": mostly(st.lists(mostly(calls), max_size=4)),
            "tool_call_id": ids,
            "name": mostly(st.sampled_from(["read_file", "search"])),
            "function_call": mostly(functions),
            "reasoning_content": anything,
        },
    ),
    weight=8,
)
bodies = mostly(
    st.fixed_dictionaries(
        {"messages": mostly(st.lists(messages, min_size=1, max_size=8), weight=8)},
        optional={
            "model": one_of("gpt-4o", "deepseek-chat", "gemini-2.5-flash", "x"),
            "stream": mostly(st.booleans()),
            "tools": anything,
            "n": anything,
        },
    ),
    weight=8,
)


@st.composite
def raw_bodies(draw: st.DrawFn) -> bytes:
    """A body as JSON bytes, sometimes damaged: cut, spliced with stray bytes, BOM-prefixed."""
    raw = orjson.dumps(draw(bodies))
    damage = draw(st.sampled_from(["none"] * 6 + ["cut", "splice", "bom", "utf8"]))
    if damage == "cut":
        raw = raw[: draw(st.integers(0, len(raw)))]
    elif damage == "splice":
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at:]
    elif damage == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif damage == "utf8":  # invalid UTF-8 inside the first string
        raw = raw.replace(b'"', b'"\xc3\x28\xff', 1)
    return raw


# --- what the proxy must answer ------------------------------------------------------------


class Failures(logging.Handler):
    """Every ERROR (or traceback) logged by anyone while installed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


@pytest.fixture
def failures() -> Iterator[Failures]:
    handler = Failures()
    loggers = [logging.getLogger(name) for name in ("", "toolcall_guard", "uvicorn")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


def assert_well_answered(response: httpx.Response, failures: Failures) -> None:
    """2xx from the upstream, or 4xx in the OpenAI error shape; nothing logged as a failure."""
    assert not failures.records, [r.getMessage() for r in failures.records]
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.status_code < 300:
        assert response.headers["x-toolcall-guard-outcome"] in ("clean", "repaired", "warned")
        return
    assert 400 <= response.status_code < 500
    error = response.json()["error"]
    assert isinstance(error["message"], str)
    assert isinstance(error["type"], str)
    assert {"param", "code"} <= set(error)


FUZZ = settings(
    max_examples=250,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def in_process() -> Iterator[Post]:
    """The app in process, the OpenAI emulator as its upstream through an ASGI transport."""
    runner = asyncio.Runner()
    stack = AsyncExitStack()

    async def start() -> httpx.AsyncClient:
        upstream = httpx.ASGITransport(create_emulator_app("openai"))
        app = create_app(proxy_settings({"openai": "http://upstream/v1"}), transport=upstream)
        await stack.enter_async_context(app.router.lifespan_context(app))
        transport = httpx.ASGITransport(app)
        client = httpx.AsyncClient(transport=transport, base_url="http://localhost", timeout=30)
        return await stack.enter_async_context(client)

    client = runner.run(start())

    def post(raw: bytes, headers: dict[str, str]) -> httpx.Response:
        return runner.run(client.post("/v1/chat/completions", content=raw, headers=headers))

    try:
        yield post
    finally:
        runner.run(stack.aclose())
        runner.close()


@FUZZ
@given(raw=raw_bodies())
def test_any_body_in_process(in_process: Post, failures: Failures, raw: bytes) -> None:
    assert_well_answered(in_process(raw, {"content-type": "application/json"}), failures)


@pytest.fixture(scope="module")
def over_sockets() -> Iterator[Post]:
    """The app and the emulator each under uvicorn on loopback."""
    with ExitStack() as stack:
        upstream = stack.enter_context(running(create_emulator_app("openai")))
        every = dict.fromkeys(("openai", "deepseek", "gemini"), upstream + "/v1")
        app = create_app(proxy_settings(every))
        url = stack.enter_context(running(app)) + "/v1/chat/completions"
        http = stack.enter_context(httpx.Client(timeout=30))

        def post(raw: bytes, headers: dict[str, str]) -> httpx.Response:
            if headers.pop("x-chunked", None):  # a generator body goes chunked
                pieces = [piece for piece in (raw[:7], raw[7:]) if piece]
                return http.post(url, content=iter(pieces), headers=headers)
            return http.post(url, content=raw, headers=headers)

        yield post


@settings(FUZZ, max_examples=40)
@given(
    raw=raw_bodies(),
    chunked=st.booleans(),
    content_type=st.sampled_from(["application/json", "text/plain", "", "application/json; q=1"]),
)
def test_any_body_over_sockets(
    over_sockets: Post, failures: Failures, raw: bytes, chunked: bool, content_type: str
) -> None:
    headers = {"content-type": content_type} | ({"x-chunked": "1"} if chunked else {})
    assert_well_answered(over_sockets(raw, headers), failures)


# --- the extremes ----------------------------------------------------------------------------

USER = {"role": "user", "content": "go"}


def _calls(n: int) -> list[dict[str, Any]]:
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [{"id": f"call_{i}", **call} for i in range(n)]


def _with_results(n: int) -> list[dict[str, Any]]:
    results = [{"role": "tool", "tool_call_id": f"call_{i}", "content": "ok"} for i in range(n)]
    return [USER, {"role": "assistant", "content": None, "tool_calls": _calls(n)}, *results]


def _chat(messages: list[Any], **extra: Any) -> bytes:
    return orjson.dumps({"model": "gpt-4o", "messages": messages, **extra})


def _deep(depth: int) -> bytes:
    """A chat body nesting exactly ``depth`` levels (body, messages, message, then lists)."""
    lists = depth - 3
    return b'{"model":"gpt-4o","messages":[{"role":"user","content":"x","meta":%s}]}' % (
        b"[" * lists + b"]" * lists
    )


EXTREMES: dict[str, tuple[bytes | Callable[[], bytes], int | None, str | None]] = {
    "3000-tool-calls-split": (lambda: _chat(_with_results(3000)), 200, "repaired"),
    "5000-tool-calls": (lambda: _chat(_with_results(5000)), 413, "request_too_large"),
    "20001-messages": (lambda: _chat([USER] * 20_001), 413, "request_too_large"),
    "8MiB-content": (lambda: _chat([{**USER, "content": "x" * 8_000_000}]), 200, "clean"),
    "33MiB-body": (lambda: _chat([USER], pad="x" * 33_554_432), 413, "request_too_large"),
    "depth-100000": (b"[" * 100_000 + b"]" * 100_000, 400, "invalid_request_body"),
    "depth-65": (_deep(65), 400, "invalid_request_body"),
    "invalid-utf8": (b'{"messages":[{"role":"user","content":"\xff\xfe"}]}', 400, None),
    "lone-surrogate": (b'{"messages":[{"role":"user","content":"\\ud800"}]}', 400, None),
    "number-overflow": (b'{"messages":[{"role":"user","content":"x"}],"n":1e400}', 400, None),
    "NaN": (b'{"messages":[{"role":"user","content":"x"}],"n":NaN}', 400, None),
    "empty": (b"", 400, "invalid_request_body"),
    "null": (b"null", 400, "invalid_request_body"),
    "unknown-roles": (
        _chat([USER, {"role": "robot", "content": "x"}]),
        400,
        "invalid_tool_history",
    ),
    "every-part-shape": (
        _chat(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                        {"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}},
                        {"type": "file", "file": {"file_id": "f"}},
                        {"type": "refusal", "refusal": "no"},
                        {"type": "video", "video": 1},
                        {},
                        "bare string",
                        None,
                    ],
                },
                {"role": "assistant", "content": [{"type": "image_url"}]},
                {"role": "tool", "tool_call_id": "x", "content": [{"type": "text"}]},
            ]
        ),
        None,
        None,
    ),
}


@pytest.mark.parametrize(("raw", "status", "code"), EXTREMES.values(), ids=EXTREMES.keys())
def test_extremes(
    in_process: Post,
    failures: Failures,
    raw: bytes | Callable[[], bytes],
    status: int | None,
    code: str | None,
) -> None:
    body = raw() if callable(raw) else raw  # the big ones are built when their test runs
    response = in_process(body, {"content-type": "application/json"})
    assert_well_answered(response, failures)
    if status is not None:
        assert response.status_code == status, response.text[:500]
    if status == 200:
        assert response.headers["x-toolcall-guard-outcome"] == code
    elif code is not None:
        assert response.json()["error"]["code"] == code


# --- each limit, configured, at its boundary -----------------------------------------------


def _sized(size: int) -> bytes:
    """A chat body of exactly ``size`` bytes."""
    bare = _chat([USER], pad="")
    return _chat([USER], pad="x" * (size - len(bare)))


LIMITS = {
    "max_body_bytes": (_sized, 413, None),
    "max_messages": (lambda n: _chat([USER] * n), 413, "messages"),
    "max_tool_calls_per_message": (
        lambda n: _chat(_with_results(n)),
        413,
        "messages[1].tool_calls",
    ),
    "max_json_depth": (_deep, 400, None),
}


@pytest.fixture(scope="module")
def limited() -> Iterator[Callable[[dict[str, int]], Post]]:
    """``limited(server_settings)``: a POST function to an in-process app with those limits."""
    runner = asyncio.Runner()
    stack = AsyncExitStack()

    async def start(server: dict[str, int]) -> httpx.AsyncClient:
        upstream = httpx.ASGITransport(create_emulator_app("openai"))
        settings_ = proxy_settings({"openai": "http://upstream/v1"}, server=server)
        app = create_app(settings_, transport=upstream)
        await stack.enter_async_context(app.router.lifespan_context(app))
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://localhost")
        return await stack.enter_async_context(client)

    def build(server: dict[str, int]) -> Post:
        client = runner.run(start(server))
        return lambda raw, headers: runner.run(
            client.post("/v1/chat/completions", content=raw, headers=headers)
        )

    try:
        yield build
    finally:
        runner.run(stack.aclose())
        runner.close()


@pytest.mark.parametrize("limit", [5, 37, 300])
@pytest.mark.parametrize("name", LIMITS)
def test_each_limit_holds_exactly_at_its_configured_value(
    limited: Callable[[dict[str, int]], Post], failures: Failures, name: str, limit: int
) -> None:
    make, status, param = LIMITS[name]
    value = {"max_body_bytes": 1024 + limit * 100, "max_json_depth": 4 + limit % 200}.get(
        name, limit
    )
    post = limited({name: value})
    at = post(make(value), {})
    assert_well_answered(at, failures)
    assert f"server.{name}" not in at.text  # at the limit: accepted
    over = post(make(value + 1), {})
    assert over.status_code == status, over.text[:300]
    error = over.json()["error"]
    assert f"server.{name}" in error["message"]  # names the setting to raise
    assert error["param"] == param
