"""The native Gemini emulators answer every body with a 200 or a Google error, never a crash."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.emulator.common import Rejection
from proxy.emulator.gemini_native_answer import plan_reply, reply_body, stream_chunks
from proxy.emulator.gemini_native_rules import Strictness, validate_native

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6)
scalars |= st.sampled_from(["skip_thought_signature_validator", "user", "model", "read_file"])
keys = st.sampled_from(
    ["role", "parts", "text", "functionCall", "function_call", "functionResponse", "name",
     "args", "response", "id", "thoughtSignature", "thought_signature", "inlineData", "x"]
)  # fmt: skip
shaped = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=16,
)
contents = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "model", "tool"])},
                          optional={"parts": shaped}),
    max_size=5,
)  # fmt: skip
tools = st.just([{"functionDeclarations": [{"name": "read_file"}]}]) | shaped
requests = st.fixed_dictionaries({"contents": contents}, optional={"tools": tools}) | shaped
strictness = st.builds(Strictness, st.booleans(), st.booleans(), st.booleans(), st.booleans())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    endpoint=st.sampled_from(["aistudio", "vertex", "code-assist"]),
    model=st.sampled_from(["gemini-2.5-flash", "gemini-3-pro-preview"]),
    request=requests,
    strict=strictness,
)
def test_validate_then_answer_never_raises(
    endpoint: str, model: str, request: Any, strict: Strictness
) -> None:
    found = validate_native(endpoint, model, request, strict)
    if found is not None:
        assert isinstance(found, Rejection)
        assert found.status == 400
        assert orjson.loads(found.body)["error"]["code"] == 400
        return
    raw = orjson.dumps(request)
    reply = plan_reply(endpoint, model, request, raw)
    assert orjson.loads(reply_body(reply))
    assert stream_chunks(reply, None)
