"""``serve --emulate`` points each Messages-capable upstream's ``anthropic_base_url`` at its
emulator's own Messages path (DeepSeek's ``/anthropic/v1``, GLM's ``/api/anthropic/v1``…)."""

from __future__ import annotations

import pytest

from proxy.quickstart import _messages_url

CASES = [
    ("anthropic", "http://127.0.0.1:5001/v1", "http://127.0.0.1:5001/v1"),
    ("deepseek", "http://127.0.0.1:5002/v1", "http://127.0.0.1:5002/anthropic/v1"),
    ("kimi", "http://127.0.0.1:5003/v1", "http://127.0.0.1:5003/anthropic/v1"),
    ("glm", "http://127.0.0.1:5004/api/paas/v4", "http://127.0.0.1:5004/api/anthropic/v1"),
    ("minimax", "http://127.0.0.1:5005/v1", "http://127.0.0.1:5005/anthropic/v1"),
]


@pytest.mark.parametrize(("name", "chat_url", "messages_url"), CASES)
def test_messages_endpoint_of_each_emulator(name: str, chat_url: str, messages_url: str) -> None:
    fields = {"base_url": chat_url, "anthropic_base_url": "https://example.invalid/v1"}
    assert _messages_url(name, chat_url, fields) == {"anthropic_base_url": messages_url}


def test_chat_only_upstreams_and_settings_without_the_key_are_left_alone() -> None:
    assert _messages_url("openai", "http://127.0.0.1:5006/v1", {"anthropic_base_url": None}) == {}
    assert _messages_url("deepseek", "http://127.0.0.1:5002/v1", {"base_url": "x"}) == {}
