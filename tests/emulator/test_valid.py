"""Valid histories pass all three emulators; their model switches are where the docs put them."""

from __future__ import annotations

from typing import Any

import pytest

from proxy.emulator import PROVIDERS, validate
from tests.emulator import asks, assistant, body, call, result, signed, system, user

MODELS = {"openai": "gpt-4o", "deepseek": "deepseek-chat", "gemini": "gemini-2.5-flash"}

HISTORIES: list[tuple[str, list[dict[str, Any]]]] = [
    ("plain-chat", [system(), user()]),
    ("multi-turn", [system(), user("hi"), assistant("hello"), user("how are you?"),
                    assistant("fine"), user("bye")]),
    ("tool-round-trip", [user(), asks(call("a")), result("a"), assistant("18 C in Paris.")]),
    ("parallel-calls", [user(), asks(call("a"), call("b", name="get_time"), call("c")),
                        result("a"), result("b", "12:00", name="get_time"), result("c"),
                        assistant("Done."), user("thanks")]),
    ("results-in-any-order", [user(), asks(call("a"), call("b")), result("b"), result("a")]),
    ("chained-steps", [user(), asks(call("a")), result("a"), asks(call("b")), result("b"),
                       assistant("ok"), user(), asks(call("c")), result("c")]),
    ("content-parts", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
]  # fmt: skip
PARTS_FOR_DEEPSEEK = {"content-parts"}  # D9: DeepSeek takes strings only


# the second-tier emulators have their own valid histories (ids, names) in test_<provider>.py
@pytest.mark.parametrize("provider", PROVIDERS[:3])
@pytest.mark.parametrize(("case", "messages"), HISTORIES, ids=[h[0] for h in HISTORIES])
def test_valid_history_is_accepted_by_every_provider(
    provider: str, case: str, messages: list[dict[str, Any]]
) -> None:
    rejection = validate(provider, body(*messages, model=MODELS[provider]))
    if provider == "deepseek" and case in PARTS_FOR_DEEPSEEK:
        assert rejection is not None
        assert rejection.rule == "D9"
    else:
        assert rejection is None


def test_gemini_3_round_trip_with_the_signature_it_returned() -> None:
    messages = [user(), asks(signed("a", "c2lnbmF0dXJl"), call("b")), result("a"), result("b")]
    assert validate("gemini", body(*messages, model="gemini-3-pro-preview")) is None


def test_deepseek_thinking_round_trip_with_reasoning_content() -> None:
    messages = [user(), asks(call("a"), reasoning_content="Let me look."), result("a")]
    for model in ("deepseek-reasoner", "deepseek-v4-pro"):
        assert validate("deepseek", body(*messages, model=model)) is None


def test_the_same_reasoning_content_is_an_unknown_parameter_on_openai() -> None:
    messages = [user(), asks(call("a"), reasoning_content="Let me look."), result("a")]
    rejection = validate("openai", body(*messages))
    assert rejection is not None
    assert rejection.message == "Unknown parameter: 'messages[1].reasoning_content'."


def test_unknown_provider_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown provider 'cohere'"):
        validate("cohere", body(user()))
