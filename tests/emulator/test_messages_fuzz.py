"""The Messages emulators answer every JSON value with a Rejection or an answer, never an
exception (the hidden corpus and the fuzzers send bodies of every shape)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.emulator.common import Rejection
from proxy.emulator.messages import MESSAGES_PROVIDERS, messages_reply, validate_messages
from proxy.emulator.messages_threads import Threads

scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8)
ids = st.sampled_from(["toolu_a", "toolu_b", "srvtoolu_1", "functions.f:0", ""])
types = st.sampled_from(
    ["text", "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use",
     "web_search_tool_result", "advisor_tool_result", "image", "tool_reference", "x"]
)  # fmt: skip
keys = st.sampled_from(
    ["type", "text", "id", "name", "input", "tool_use_id", "content", "is_error", "thinking",
     "signature", "data", "cache_control", "tool_name"]
)  # fmt: skip
# blocks with the keys the validators look at, so the search reaches the deep checks
shaped = st.recursive(
    scalars | ids | types,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=14,
)
blocks = st.fixed_dictionaries({"type": types}, optional={
    "id": ids, "tool_use_id": ids, "name": st.sampled_from(["f", "", 3]), "input": shaped,
    "text": st.sampled_from(["", " ", "hi", "ok "]), "content": shaped, "signature": shaped,
    "thinking": shaped, "cache_control": st.just({"type": "ephemeral"})})  # fmt: skip
roles = st.sampled_from(["user", "assistant", "system", "tool", 1])
messages = st.lists(
    st.fixed_dictionaries({"role": roles, "content": st.lists(blocks, max_size=4) | shaped}),
    max_size=6,
)
models = st.sampled_from(["claude-sonnet-4-6", "claude-opus-4-8", "deepseek-chat", "kimi-k2.5",
                          "kimi-k3", "glm-4.6", "MiniMax-M2"])  # fmt: skip
thinking = st.sampled_from([None, {"type": "enabled"}, {"type": "adaptive"}, {"type": "disabled"}])
bodies = st.fixed_dictionaries(
    {"model": models, "max_tokens": st.just(64), "messages": messages},
    optional={"thinking": thinking, "tools": shaped, "stream": st.booleans(),
              "tool_choice": shaped, "thread": shaped},
) | shaped  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(provider=st.sampled_from(MESSAGES_PROVIDERS), value=bodies)
def test_validate_and_answer_never_raise(provider: str, value: Any) -> None:
    raw = orjson.dumps(value)
    found = validate_messages(provider, value, raw)
    if found is not None:
        assert isinstance(found, Rejection)
        assert found.status in (400, 422, 500)
        assert orjson.loads(found.body)
    reply = messages_reply(provider, raw, 2, Threads() if provider == "anthropic" else None)
    if isinstance(reply, Rejection):
        assert found is not None or "thread" in value
    else:
        assert found is None
        assert reply
