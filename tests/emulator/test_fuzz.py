"""`validate` answers every JSON value with a Rejection or None, never an exception."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.emulator import PROVIDERS, Rejection, validate

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
scalars |= st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)
roles = st.sampled_from(["system", "user", "assistant", "tool", "developer", "function", "x"])
keys = st.sampled_from(
    ["content", "tool_calls", "tool_call_id", "name", "reasoning_content", "function_call",
     "id", "type", "function", "arguments", "extra_content", "google", "thought_signature"]
)  # fmt: skip
# dicts with the keys the validators look at, so the search reaches the deep checks
shaped = st.recursive(
    scalars | st.just("call_a") | st.just("{}"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)
messages = st.lists(
    st.fixed_dictionaries({"role": roles}, optional={"content": shaped, "tool_calls": shaped,
                                                     "tool_call_id": shaped, "name": shaped,
                                                     "reasoning_content": shaped}),
    max_size=6,
)  # fmt: skip
models = st.sampled_from(["gpt-4o", "o3", "deepseek-reasoner", "deepseek-r1", "gemini-3-pro",
                          "kimi-k2.5", "devstral-small", "gemma-3",
                          "openai/gpt-oss-20b"])  # fmt: skip
bodies = st.fixed_dictionaries({"model": models, "messages": messages}) | json_values


def check(provider: str, value: Any, raw: bytes | None) -> None:
    found = validate(provider, value, raw=raw)
    assert found is None or isinstance(found, Rejection)
    if found is not None:
        assert found.status in (400, 422)  # Mistral's schema errors are 422
        assert orjson.loads(found.body)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provider=st.sampled_from(PROVIDERS), value=bodies)
def test_validate_never_raises(provider: str, value: Any) -> None:
    check(provider, value, None)


@settings(max_examples=150, deadline=None)
@given(provider=st.sampled_from(PROVIDERS), value=bodies, indent=st.booleans())
def test_validate_never_raises_with_raw_bytes(provider: str, value: Any, indent: bool) -> None:
    try:
        raw = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except orjson.JSONEncodeError:  # integers beyond 64 bits: no raw form, validate without
        raw = None
    check(provider, value, raw)


def test_deep_nesting_does_not_raise() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    for provider in PROVIDERS:
        arguments = "[" * 3000 + "]" * 3000
        tool_call = {"id": "call_a", "type": "function",
                     "function": {"name": "f", "arguments": arguments}}  # fmt: skip
        history = [
            {"role": "user", "content": deep},
            {"role": "assistant", "tool_calls": [tool_call]},
        ]
        check(provider, {"model": "m", "messages": history}, None)
