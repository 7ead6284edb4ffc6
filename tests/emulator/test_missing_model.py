"""Strict emulators refuse a chat body without ``model`` as OpenAI does (issue 25 item 5):
400, ``you must provide a model parameter``, ``param`` and ``code`` null; the other providers
say the same in their own error shape (our wording: their texts are not in the evidence)."""

from __future__ import annotations

import httpx
import pytest

from proxy.emulator import create_emulator_app
from proxy.emulator.app import PREFIXES
from proxy.emulator.validators import MISSING_MODEL, PROVIDERS
from tests.servers import running

MESSAGES = [{"role": "user", "content": "hi"}]


def test_openai_answers_its_own_text() -> None:
    with running(create_emulator_app("openai")) as url:
        answer = httpx.post(url + "/v1/chat/completions", json={"messages": MESSAGES})
        named = httpx.post(url + "/v1/chat/completions", json={"model": "", "messages": MESSAGES})
        fine = httpx.post(url + "/v1/chat/completions", json={"model": "gpt-4o", "messages": []})
    assert answer.status_code == 400
    assert answer.json() == {
        "error": {
            "message": "you must provide a model parameter",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    assert named.status_code == 400
    assert named.json()["error"]["message"] == MISSING_MODEL
    assert MISSING_MODEL not in fine.text  # with a model, the body's own faults come first


@pytest.mark.parametrize("provider", [p for p in PROVIDERS if p != "openai"])
def test_every_chat_emulator_refuses_a_body_without_model(provider: str) -> None:
    path = PREFIXES[provider][0] + "/chat/completions"
    with running(create_emulator_app(provider)) as url:
        answer = httpx.post(url + path, json={"messages": MESSAGES})
    assert answer.status_code == 400
    assert MISSING_MODEL in answer.text
