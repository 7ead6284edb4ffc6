"""The sanitizer's invariants (DESIGN §4, §11), checked against the independent strict emulators.

1. Valid out: a broken history comes out accepted by the provider's validator.
2. No false positives: for every provider preset, a history the preset's own emulator accepts
   yields no finding and the same list object, whatever the model (drawn from the models each
   preset's rules tell apart) and the request's ``thinking`` switch.
3. Idempotent: sanitizing the output again finds nothing.
4. Nothing silently lost: the input is never mutated; no user message disappears.
"""

from __future__ import annotations

import copy
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from proxy.core.policy import DIALECTS, build_policy
from proxy.emulator import PROVIDERS, validate
from tests.factories import broken_histories, for_dialect, histories, sanitize_chat

Message = dict[str, Any]
POLICIES = {dialect: build_policy(dialect) for dialect in DIALECTS}
#: Models per preset: one on each side of every model glob its rules read (thinking models,
#: signature models, Mistral-family templates, gpt-oss), the strictest first.
MODELS = {
    "openai": ["gpt-4o", "o3"],
    "deepseek": ["deepseek-reasoner", "deepseek-chat", "deepseek-v4-flash"],
    "gemini": ["gemini-3-pro-preview", "gemini-2.5-flash", "models/gemini-3-flash"],
    "kimi": ["kimi-k2.5", "kimi-k2-thinking", "kimi-k2-0905-preview"],
    "mistral": ["mistral-large-latest", "devstral-small-2507"],
    "groq": ["openai/gpt-oss-120b", "llama-3.3-70b-versatile"],
    "xai": ["grok-4"],
    "qwen": ["qwen3-coder-plus"],
    "vllm": ["mistralai/Devstral-Small-2507", "Qwen/Qwen3-Coder-30B-A3B-Instruct"],
    "ollama": ["mistral-small3.1:24b", "llama3.1:8b"],
    "anthropic": ["claude-sonnet-4-5", "claude-opus-5"],
    "glm": ["glm-4.6"],
    "minimax": ["MiniMax-M2"],
    "vertex": ["gemini-3-pro-preview", "gemini-2.5-flash"],
    "code-assist": ["gemini-3-pro-preview", "gemini-2.5-flash"],
}
#: Presets whose chat is another preset's emulator's (Gemini's models on Google Cloud).
SAME_CHAT = {"vertex": "gemini", "code-assist": "gemini"}


def chat(preset: str) -> str:
    """The preset whose chat emulator and valid histories stand for ``preset``'s."""
    return SAME_CHAT.get(preset, preset)


#: Presets whose request may carry DeepSeek's and Kimi's ``thinking`` switch (Gemini refuses
#: unknown top-level fields, G14).
THINKING = ("deepseek", "kimi")
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
SIGNATURE = {"google": {"thought_signature": "skip_thought_signature_validator"}}
ALNUM = string.ascii_letters + string.digits


def test_every_preset_is_emulated() -> None:
    assert set(map(chat, DIALECTS)) <= set(PROVIDERS), "a provider preset without its emulator"


@st.composite
def requests(draw: st.DrawFn, preset: str) -> dict[str, Any]:
    """The request around a history: a model of the preset and, where known, ``thinking``."""
    request: dict[str, Any] = {"model": draw(st.sampled_from(MODELS[preset]))}
    if preset in THINKING:
        switch = draw(st.sampled_from([None, "enabled", "disabled"]))
        if switch is not None:
            request["thinking"] = {"type": switch}
    return request


def _rename_ids(messages: list[Message], draw: st.DrawFn) -> None:
    """Ids as clients mint them: OpenAI-style, 9 letters and digits (Mistral), or Kimi's
    ``name:N`` that repeat across rounds."""
    style = draw(st.sampled_from(["openai", "nine", "kimi"]))
    mapping: dict[str, str] = {}
    for message in messages:
        for k, call in enumerate(message.get("tool_calls") or ()):
            old = call["id"]
            if style == "nine":  # distinct: a counter after five drawn characters
                new = draw(st.text(ALNUM, min_size=5, max_size=5)) + f"{len(mapping):04d}"
            elif style == "kimi":
                new = f"{call['function']['name']}:{k}"
            else:
                new = old
            mapping[old] = call["id"] = new
        if message["role"] == "tool":
            message["tool_call_id"] = mapping[message["tool_call_id"]]


def _vary_message(message: Message, draw: st.DrawFn, names: dict[str, str]) -> None:
    """What real client libraries leave on a valid message (issue 11's list)."""
    if message.get("tool_calls"):
        _vary_call_turn(message, draw)
    elif message["role"] == "assistant" and draw(st.integers(0, 3)) == 0:
        message.update({"function_call": None, "tool_calls": None, "refusal": None})
    elif message["role"] == "tool" and draw(st.booleans()):
        message["name"] = names.get(message["tool_call_id"], "read_file")
    elif message["role"] == "user" and draw(st.integers(0, 3)) == 0:
        message["content"] = [{"type": "text", "text": message["content"]}]


def _vary_call_turn(message: Message, draw: st.DrawFn) -> None:
    shape = draw(st.sampled_from(["text", "null", "empty", "missing"]))
    if shape == "missing":
        del message["content"]
    elif shape != "text":
        message["content"] = None if shape == "null" else ""
    if draw(st.booleans()):
        message["reasoning_content"] = draw(st.sampled_from(["", "Let me look."]))
    if draw(st.booleans()):
        message["tool_calls"][0]["extra_content"] = copy.deepcopy(SIGNATURE)
    for k, call in enumerate(message["tool_calls"]):
        if draw(st.integers(0, 3)) == 0:
            call["index"] = k  # left by the openai SDK's stream accumulator


@st.composite
def client_histories(draw: st.DrawFn) -> list[Message]:
    """A neutral valid history, varied the way client libraries vary what they send."""
    messages = draw(histories())
    _rename_ids(messages, draw)
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls", [])}
    for message in messages:
        _vary_message(message, draw, names)
    return messages


@pytest.mark.parametrize("preset", DIALECTS)
@SETTINGS
@given(data=st.data())
def test_what_the_emulator_accepts_yields_no_finding(preset: str, data: st.DataObject) -> None:
    messages = data.draw(client_histories())
    request = data.draw(requests(preset))
    assume(validate(chat(preset), {**request, "messages": messages}) is None)
    outcome = sanitize_chat(messages, POLICIES[preset], request={**request, "messages": messages})
    assert outcome.findings == (), [f.as_dict() for f in outcome.findings]
    assert outcome.messages is messages
    assert not outcome.changed


#: The presets whose every corruption below a repair can fix for the strictest model.
REPAIRED = ("openai", "deepseek", "gemini")


@pytest.mark.parametrize("dialect", REPAIRED)
@SETTINGS
@given(data=st.data())
def test_broken_histories_come_out_valid(dialect: str, data: st.DataObject) -> None:
    messages = data.draw(broken_histories(dialect))
    request = {"model": MODELS[dialect][0], "messages": messages}
    snapshot = copy.deepcopy(messages)
    outcome = sanitize_chat(messages, POLICIES[dialect], request=request)
    assert messages == snapshot, "the engine mutated its input"
    assert not outcome.rejected, [f.as_dict() for f in outcome.findings]
    rejection = validate(chat(dialect), {**request, "messages": outcome.messages})
    assert rejection is None, (rejection.rule, rejection.body, outcome.messages)
    again = sanitize_chat(outcome.messages, POLICIES[dialect], request=request)
    assert again.findings == (), [f.as_dict() for f in again.findings]
    assert _users(outcome.messages) >= _users(messages)
    for finding in outcome.findings:
        assert finding.path.startswith("messages[")


@pytest.mark.parametrize("preset", DIALECTS)
@SETTINGS
@given(data=st.data())
def test_any_preset_is_pure_idempotent_and_keeps_users(preset: str, data: st.DataObject) -> None:
    messages = data.draw(broken_histories(data.draw(st.sampled_from(REPAIRED))))
    request = {**data.draw(requests(preset)), "messages": messages}
    snapshot = copy.deepcopy(messages)
    outcome = sanitize_chat(messages, POLICIES[preset], request=request)
    assert messages == snapshot, "the engine mutated its input"
    if outcome.rejected:
        return
    again = sanitize_chat(outcome.messages, POLICIES[preset], request=request)
    assert again.findings == (), [f.as_dict() for f in again.findings]
    assert _users(outcome.messages) >= _users(messages)


@pytest.mark.parametrize("dialect", REPAIRED)
@SETTINGS
@given(data=st.data())
def test_direct_sends_of_broken_histories_are_refused_or_harmless(
    dialect: str, data: st.DataObject
) -> None:
    """Whenever the emulator refuses a history, the sanitizer has something to say about it."""
    messages = data.draw(broken_histories(dialect))
    request = {"model": MODELS[dialect][0], "messages": messages}
    if validate(chat(dialect), request) is not None:
        assert sanitize_chat(messages, POLICIES[dialect], request=request).findings


def test_valid_clients_histories_pass_on_the_strictest_models() -> None:
    """The neutral generator's fixed example, made valid per preset, is clean (a smoke test
    that fails loudly if a preset's data drifts from its emulator)."""
    base = [
        {"role": "user", "content": "Read a.txt."},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "",
            "tool_calls": [
                {
                    "id": "Ab3p0QnXz",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    "extra_content": SIGNATURE,
                }
            ],
        },
        {"role": "tool", "tool_call_id": "Ab3p0QnXz", "content": "A", "name": "read_file"},
    ]
    for preset in DIALECTS:
        messages = for_dialect(base, "openai")
        if POLICIES[preset].provider.message_fields is not None:  # strict schemas
            messages[1].pop("reasoning_content")
            messages[1]["tool_calls"][0].pop("extra_content")
        request = {"model": MODELS[preset][0], "messages": messages}
        if validate(chat(preset), request) is None:
            assert sanitize_chat(messages, POLICIES[preset], request=request).findings == ()


def _users(messages: list[Message]) -> int:
    return sum(1 for m in messages if m.get("role") == "user")
