"""Any body posted to ``/v1/messages``: never a 5xx, never a traceback (issue 21 §2, COMMON).

Property-based (hypothesis), over a real socket: Messages-shaped bodies with wrong types at
every level, content blocks of every kind (known, unknown, malformed), damaged bytes, through
the real app with the strict Anthropic emulator as its upstream under each Messages dialect's
preset. Every answer is a 2xx from the upstream, a 4xx the emulator gave in Anthropic's shape,
or the proxy's own 4xx in Anthropic's shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.app import create_app
from proxy.emulator import create_emulator_app
from proxy.settings import load_settings
from tests.hardening.test_fuzz_chat import FUZZ, Failures, anything, mostly, one_of, raw_bodies
from tests.servers import running

pytest_plugins = ["tests.hardening.test_fuzz_chat"]

Post = Callable[[str, bytes], httpx.Response]
PRESETS = ("anthropic", "deepseek", "kimi", "glm", "minimax")

ids = mostly(st.sampled_from(["toolu_01A", "toolu_01B", "srvtoolu_1", ""]) | st.text(max_size=20))
block = st.fixed_dictionaries(
    {
        "type": one_of(
            *("text", "tool_use", "tool_result", "thinking", "redacted_thinking", "image"),
            *("server_tool_use", "web_search_tool_result", "document", "tool_reference", "?"),
        )
    },
    optional={
        "text": mostly(st.text(max_size=10)),
        "id": ids,
        "tool_use_id": ids,
        "name": one_of("read_file", "web_search", ""),
        "input": mostly(
            st.dictionaries(st.text(max_size=4), st.integers(-(2**63), 2**63 - 1), max_size=2)
        ),
        "content": mostly(st.text(max_size=10) | st.lists(anything, max_size=2)),
        "is_error": anything,
        "thinking": mostly(st.text(max_size=10)),
        "signature": one_of("c2ln", ""),
        "cache_control": one_of({"type": "ephemeral"}),
        "source": anything,
    },
)
message = mostly(
    st.fixed_dictionaries(
        {"role": one_of("user", "assistant", "system", "tool", "")},
        optional={"content": mostly(st.text(max_size=20) | st.lists(mostly(block), max_size=4))},
    ),
    weight=8,
)
messages_bodies = mostly(
    st.fixed_dictionaries(
        {
            "model": one_of("claude-sonnet-4-5", "claude-opus-4-8", "x"),
            "max_tokens": mostly(st.integers(1, 4096)),
            "messages": mostly(st.lists(message, min_size=1, max_size=6), weight=8),
        },
        optional={
            "system": mostly(st.text(max_size=10) | st.lists(mostly(block), max_size=2)),
            "thinking": one_of({"type": "enabled", "budget_tokens": 1024}, {"type": "disabled"}),
            "tools": anything,
            "tool_choice": anything,
            "stream": mostly(st.booleans()),
        },
    ),
    weight=8,
)


@pytest.fixture(scope="module")
def post_messages() -> Iterator[Post]:
    """The app on a real server (no event loop of the test's own: the browser tests' may be
    running); one upstream per Messages preset, each the Anthropic emulator in process."""
    emulator = httpx.ASGITransport(create_emulator_app("anthropic"))
    base = {"base_url": "http://upstream/v1", "anthropic_base_url": "http://upstream/v1"}
    settings = load_settings(
        upstreams={name: {**base, "policy": name} for name in PRESETS},
        routing={"default": "anthropic"},
        repair_log={"url": "memory://", "flush_interval": 0.05},
    )
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    with running(create_app(settings, transport=emulator)) as url, httpx.Client(timeout=30) as http:

        def post(upstream: str, raw: bytes) -> httpx.Response:
            return http.post(f"{url}/{upstream}/v1/messages", content=raw, headers=headers)

        yield post


def assert_answered_in_anthropics_shape(response: httpx.Response, failures: Failures) -> None:
    assert not failures.records, [r.getMessage() for r in failures.records]
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.status_code < 300:
        assert response.headers["x-toolcall-guard-outcome"] in ("clean", "repaired", "warned")
        return
    error = response.json()
    assert error["type"] == "error", error
    assert isinstance(error["error"]["type"], str)
    assert isinstance(error["error"]["message"], str)


@FUZZ
@given(upstream=st.sampled_from(PRESETS), body=messages_bodies)
def test_messages_shaped_bodies(
    post_messages: Post, failures: Failures, upstream: str, body: Any
) -> None:
    response = post_messages(upstream, orjson.dumps(body))
    assert_answered_in_anthropics_shape(response, failures)


@FUZZ
@given(raw=raw_bodies())
def test_damaged_bytes(post_messages: Post, failures: Failures, raw: bytes) -> None:
    assert_answered_in_anthropics_shape(post_messages("anthropic", raw), failures)
