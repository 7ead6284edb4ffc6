"""``create_app(transport=...)``: the httpx engine, with an in-process upstream."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import orjson

from proxy.emulator import ReceivedRequest, create_emulator_app
from tests.e2e.conftest import Proxy

BODY = orjson.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})


def test_an_asgi_transport_reaches_the_emulator_in_process(
    http: httpx.Client, start_proxy: Callable[..., Proxy]
) -> None:
    received: list[ReceivedRequest] = []
    transport = httpx.ASGITransport(create_emulator_app("openai", received=received))
    proxy = start_proxy({"openai": "http://emulator.invalid/v1"}, transport=transport)

    response = http.post(proxy.v1 + "/chat/completions", content=BODY, headers={"x-a": "1"})

    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"].startswith("Emulated openai")
    [request] = received
    assert request.path == "/v1/chat/completions"
    assert request.body == BODY
    assert request.headers["x-a"] == "1"


def test_the_httpx_engine_sends_the_clients_headers_and_nothing_else(
    http: httpx.Client, start_proxy: Callable[..., Proxy]
) -> None:
    seen: list[httpx.Request] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(
            201,
            content=b'{"ok": true}',
            headers={"x-up": "yes", "connection": "close", "x-request-id": "req_up"},
        )

    proxy = start_proxy({"openai": "http://up.invalid/v1"}, transport=httpx.MockTransport(upstream))
    sent = {"x-b": "2", "user-agent": "agent/1.0", "content-type": "application/json"}
    response = http.post(proxy.v1 + "/chat/completions?x=1", content=BODY, headers=sent)

    assert response.status_code == 201
    assert response.headers["x-up"] == "yes"
    assert response.headers["x-upstream-request-id"] == "req_up"
    assert response.headers["x-request-id"] != "req_up"
    [request] = seen
    assert str(request.url) == "http://up.invalid/v1/chat/completions?x=1"
    assert request.content == BODY
    names = [k.decode().lower() for k, _ in request.headers.raw]
    assert "x-b" in names
    assert request.headers["user-agent"] == "agent/1.0"
    assert request.headers["host"] == "up.invalid"
    assert request.headers["content-length"] == str(len(BODY))
    assert names.count("content-length") == 1
    assert "connection" not in names
