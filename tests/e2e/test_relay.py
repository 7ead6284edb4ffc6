"""What the proxy relays besides sanitizing: routing, other /v1 paths, headers and keys."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import orjson
import pytest

from tests.e2e.conftest import MODEL, Proxy, Upstream

HELLO = [{"role": "user", "content": "hello"}]


def chat(http: httpx.Client, url: str, model: str, **headers: str) -> httpx.Response:
    body = orjson.dumps({"model": model, "messages": HELLO})
    return http.post(url + "/chat/completions", content=body, headers=headers)


@pytest.mark.parametrize("provider", ["openai", "deepseek", "gemini"])
def test_the_model_glob_picks_the_upstream(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream], provider: str
) -> None:
    response = chat(http, proxy.v1, MODEL[provider])
    assert response.status_code == 200, response.text
    assert [u.provider for u in upstreams.values() if u.chats()] == [provider]


def test_the_path_prefix_beats_header_and_model(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    headers = {"x-toolcall-guard-upstream": "gemini"}
    response = chat(http, proxy.url + "/deepseek/v1", "gpt-4o", **headers)
    assert response.status_code == 200, response.text
    [received] = upstreams["deepseek"].chats()
    assert "x-toolcall-guard-upstream" not in received.headers


def test_the_header_beats_the_model(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    response = chat(http, proxy.v1, "gpt-4o", **{"x-toolcall-guard-upstream": "deepseek"})
    assert response.status_code == 200, response.text
    assert upstreams["deepseek"].chats() != []
    assert upstreams["openai"].chats() == []


def test_unknown_model_goes_to_the_default(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    assert chat(http, proxy.v1, "gpt-4o-mini").status_code == 200
    chat(http, proxy.v1, "llama-3")  # the emulator may refuse the model; it got the request
    assert len(upstreams["openai"].chats()) == 2


def test_unknown_prefix_is_404_and_unknown_header_400(http: httpx.Client, proxy: Proxy) -> None:
    response = chat(http, proxy.url + "/mistral/v1", "gpt-4o")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "unknown_upstream"
    response = chat(http, proxy.v1, "gpt-4o", **{"x-toolcall-guard-upstream": "mistral"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unknown_upstream"


def test_other_v1_paths_are_relayed_untouched(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    models = http.get(proxy.url + "/gemini/v1/models?page_size=2")
    assert models.status_code == 200
    assert models.json()["data"][0]["owned_by"] == "google"
    [received] = upstreams["gemini"].received
    assert received.path == "/v1beta/openai/models"
    assert "x-toolcall-guard-outcome" not in models.headers

    body = b'{"model": "deepseek-chat", "input": ["some text"]}'
    embeddings = http.post(proxy.v1 + "/embeddings", content=body)
    assert embeddings.status_code == 404  # the emulators serve no embeddings: their own 404
    assert embeddings.content == http.post(upstreams["deepseek"].url + "/embeddings").content
    assert upstreams["deepseek"].received[0].body == body  # routed by model, body untouched


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH"])
def test_any_method_is_relayed(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream], method: str
) -> None:
    response = http.request(method, proxy.url + "/openai/v1/files/file-abc?limit=2")
    direct = http.request(method, upstreams["openai"].url + "/files/file-abc?limit=2")
    assert response.status_code == direct.status_code
    assert response.content == direct.content  # the provider's own 404, as it is
    [received, _] = upstreams["openai"].received
    assert (received.method, received.path) == (method, "/v1/files/file-abc")


def test_hop_by_hop_and_control_headers_are_not_forwarded(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    headers = {
        "connection": "keep-alive, x-hop",
        "x-hop": "1",
        "te": "trailers",
        "keep-alive": "timeout=5",
        "x-custom": "kept",
        "x-toolcall-guard-mode": "off",
    }
    assert chat(http, proxy.v1, "gpt-4o", **headers).status_code == 200
    received = upstreams["openai"].chats()[0].headers
    for name in ("x-hop", "te", "keep-alive", "x-toolcall-guard-mode"):
        assert name not in received
    assert received["x-custom"] == "kept"
    assert received["host"] == upstreams["openai"].url.split("/")[2]
    assert (
        "accept-encoding" not in received
        or received["accept-encoding"] == (http.headers["accept-encoding"])
    )


def test_request_id_is_echoed_when_sane_else_generated(http: httpx.Client, proxy: Proxy) -> None:
    sane = chat(http, proxy.v1, "gpt-4o", **{"x-request-id": "run-42:step.7_a"})
    assert sane.headers["x-request-id"] == "run-42:step.7_a"
    insane = chat(http, proxy.v1, "gpt-4o", **{"x-request-id": "a b<script>"})
    assert insane.headers["x-request-id"] not in ("a b<script>", "")
    too_long = chat(http, proxy.v1, "gpt-4o", **{"x-request-id": "a" * 129})
    assert len(too_long.headers["x-request-id"]) < 129
    assert (
        chat(http, proxy.v1, "gpt-4o").headers["x-request-id"]
        != (chat(http, proxy.v1, "gpt-4o").headers["x-request-id"])
    )


def test_the_clients_key_passes_through_without_a_configured_key(
    http: httpx.Client,
    start_proxy: Callable[..., Proxy],
    upstreams: dict[str, Upstream],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    proxy = start_proxy({"openai": upstreams["openai"].url})
    chat(http, proxy.v1, "gpt-4o", authorization="Bearer sk-client")
    assert upstreams["openai"].chats()[0].headers["authorization"] == "Bearer sk-client"


def test_a_configured_key_replaces_the_clients(
    http: httpx.Client,
    start_proxy: Callable[..., Proxy],
    upstreams: dict[str, Upstream],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_UPSTREAM_KEY", "sk-injected")
    proxy = start_proxy(
        {"openai": upstreams["openai"].url},
        upstream_overrides={"api_key_env": "TEST_UPSTREAM_KEY"},
    )
    chat(http, proxy.v1, "gpt-4o", authorization="Bearer sk-client")
    assert upstreams["openai"].chats()[0].headers["authorization"] == "Bearer sk-injected"


def test_client_keys_guard_the_proxy_and_are_never_forwarded(
    http: httpx.Client,
    start_proxy: Callable[..., Proxy],
    upstreams: dict[str, Upstream],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_CLIENT_KEYS", "ck-one, ck-two")
    proxy = start_proxy(
        {"openai": upstreams["openai"].url}, server={"client_keys_env": "TEST_CLIENT_KEYS"}
    )
    for auth in (None, "Bearer ck-three", "Basic ck-one", "ck-one"):
        headers = {"authorization": auth} if auth else {}
        response = chat(http, proxy.v1, "gpt-4o", **headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "invalid_api_key"
        assert response.json()["error"]["type"] == "invalid_request_error"
    assert http.get(proxy.v1 + "/models").status_code == 401  # every proxied path
    assert upstreams["openai"].received == []

    assert chat(http, proxy.v1, "gpt-4o", authorization="Bearer ck-two").status_code == 200
    assert chat(http, proxy.v1, "gpt-4o", authorization="bearer ck-one").status_code == 200
    assert all("authorization" not in r.headers for r in upstreams["openai"].received)
    assert http.get(proxy.url + "/healthz").status_code == 200  # ops stay open
