"""Rule parameters a rule cannot use fail when the policy is built, naming the config key."""

from __future__ import annotations

import pytest

from proxy.core.chat.rules import RULES
from proxy.core.policy import PRESETS, build_policy
from proxy.errors import ConfigError
from proxy.settings import load_settings
from tests.factories import sanitize_chat

ID_FORMAT = "tool_call_id_format"
CALL = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}


def _remap(pattern: str) -> dict[str, object]:
    return {ID_FORMAT: {"action": "remap", "pattern": pattern}}


@pytest.mark.parametrize("pattern", ["^[a-z", "(", "*call", "a{2,1}"])
def test_an_invalid_id_pattern_fails_when_the_policy_is_built(pattern: str) -> None:
    with pytest.raises(ValueError, match=r"invalid regular expression") as caught:
        build_policy("mistral", base="openai", overrides=_remap(pattern))
    message = str(caught.value)
    assert message.startswith(f"policies.mistral.rules.{ID_FORMAT}.pattern: ")
    assert repr(pattern) in message


def test_an_invalid_id_pattern_is_a_config_error_at_start() -> None:
    policies = {"gemini": {"base": "gemini", "rules": _remap("[0-9")}}
    with pytest.raises(ConfigError, match=rf"policies\.gemini\.rules\.{ID_FORMAT}\.pattern: "):
        load_settings(policies=policies)


def test_a_valid_pattern_builds_and_applies() -> None:
    policy = build_policy("mistral", base="openai", overrides=_remap("^[a-zA-Z0-9]{9}$"))
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a"},
    ]
    outcome = sanitize_chat(history, policy)
    assert [f.path for f in outcome.findings if f.rule == ID_FORMAT] == [
        "messages[1].tool_calls[0].id",
        "messages[2].tool_call_id",
    ]
    new_id = outcome.messages[1]["tool_calls"][0]["id"]
    assert len(new_id) == 9
    assert new_id.isalnum()
    assert outcome.messages[2]["tool_call_id"] == new_id


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_passes_the_checks_of_its_rules(preset: str) -> None:
    policy = build_policy(preset)
    for rule in RULES.values():
        if rule.check_params is not None:
            rule.check_params(policy.settings[rule.name].params)


def test_the_id_format_rule_declares_its_check() -> None:
    assert RULES[ID_FORMAT].check_params is not None
