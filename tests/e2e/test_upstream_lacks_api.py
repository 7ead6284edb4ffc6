"""An upstream without the Responses API (issue 25 item 5): its bare 404 to POST /v1/responses
comes back as an OpenAI-shaped error naming the upstream and its URL; a 404 about something the
request names (a model, a stored response) is relayed as the upstream sent it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest

from proxy.app import create_app
from proxy.emulator import create_emulator_app
from proxy.settings import load_settings
from tests.servers import running

BODY = {"model": "deepseek-chat", "input": "hi"}
MODEL_GONE = {
    "error": {
        "message": "The model 'gpt-9' does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
}


async def _model_gone(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An upstream with a Responses API that refuses the model with a 404."""
    if scope["type"] != "http":
        return
    body = orjson.dumps(MODEL_GONE)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 404, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture(scope="module")
def proxy() -> Iterator[str]:
    with running(create_emulator_app("deepseek")) as deepseek, running(_model_gone) as other:
        upstreams = {
            "deepseek": {"base_url": deepseek + "/v1", "models": ["deepseek-*"]},
            "other": {"base_url": other + "/v1", "models": ["gpt-*"]},
        }
        settings = load_settings(
            upstreams=upstreams, routing={"default": "deepseek"}, repair_log={"url": "memory://"}
        )
        with running(create_app(settings)) as url:
            yield url


def test_a_bare_404_names_the_upstream_without_the_api(proxy: str) -> None:
    answer = httpx.post(proxy + "/deepseek/v1/responses", json=BODY, timeout=30)
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "upstream_lacks_api"
    assert error["message"].startswith("Upstream 'deepseek' has no Responses API: POST http://")
    assert "/v1/responses answered 404" in error["message"]
    assert "/v1/chat/completions" in error["message"]


def test_a_404_about_the_model_is_relayed_unchanged(proxy: str) -> None:
    answer = httpx.post(proxy + "/other/v1/responses", json={"model": "gpt-9", "input": "hi"})
    assert answer.status_code == 404
    assert answer.json() == MODEL_GONE


def test_chat_404s_are_relayed_unchanged(proxy: str) -> None:
    body = {"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}
    answer = httpx.post(proxy + "/other/v1/chat/completions", json=body)
    assert answer.status_code == 404
    assert answer.json() == MODEL_GONE
