"""When the upstream is down, silent or says no: the proxy's 502/504, the upstream's own errors."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import openai
import orjson
import pytest

from tests.e2e.conftest import Proxy, Upstream, closed_port_url, silent_server

BODY = orjson.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})


@pytest.mark.parametrize("path", ["/chat/completions", "/models"])
def test_upstream_down_is_502(
    http: httpx.Client, start_proxy: Callable[..., Proxy], path: str
) -> None:
    proxy = start_proxy({"openai": closed_port_url()})
    response = http.post(proxy.v1 + path, content=BODY)
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "upstream_unavailable"
    assert error["type"] == "upstream_error"
    assert "'openai'" in error["message"]


def test_a_silent_upstream_is_504_within_the_read_timeout(
    http: httpx.Client, start_proxy: Callable[..., Proxy]
) -> None:
    with silent_server() as url:
        proxy = start_proxy({"openai": url}, upstream_overrides={"read_timeout": 0.5})
        started = time.perf_counter()
        response = http.post(proxy.v1 + "/chat/completions", content=BODY)
        elapsed = time.perf_counter() - started
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"
    assert 0.4 < elapsed < 3.0


def test_the_sdk_sees_a_502_as_an_api_error(start_proxy: Callable[..., Proxy]) -> None:
    proxy = start_proxy({"openai": closed_port_url()})
    client = openai.OpenAI(base_url=proxy.v1, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 502
    assert caught.value.code == "upstream_unavailable"


@pytest.mark.parametrize("status", [429, 500, 503])
def test_upstream_errors_pass_through_with_body_and_retry_after(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream], status: int
) -> None:
    headers = {"x-emulator-status": str(status)}
    direct = http.post(upstreams["openai"].url + "/chat/completions", content=BODY, headers=headers)
    relayed = http.post(proxy.v1 + "/chat/completions", content=BODY, headers=headers)
    assert relayed.status_code == direct.status_code == status
    assert relayed.content == direct.content
    assert relayed.headers.get("retry-after") == direct.headers.get("retry-after")
    if status != 500:
        assert relayed.headers["retry-after"] == "1"


def test_the_sdk_gets_the_rate_limit_error_as_sent(
    proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    client = openai.OpenAI(base_url=proxy.v1, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"x-emulator-status": "429"},
        )
    assert caught.value.response.headers["retry-after"] == "1"
    assert caught.value.body is not None
