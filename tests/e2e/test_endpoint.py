"""The endpoint's own choices, over a real socket: honest records, request encodings, the mode
header, the wire API units it dispatches to."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable

import httpx
import orjson

from tests.e2e.conftest import Proxy, Upstream, closed_port_url
from tests.e2e.test_records import ORPHAN, USER, chat, stored


def test_a_502_to_the_client_is_recorded_as_such(
    http: httpx.Client, start_proxy: Callable[..., Proxy]
) -> None:
    proxy = start_proxy({"openai": closed_port_url()})
    response = chat(http, proxy, {"model": "gpt-4o", "messages": ORPHAN})
    assert response.status_code == 502
    record = stored(proxy, response.headers["x-toolcall-guard-record"])
    assert record["status"] == 502
    assert record["proxy_error"] == "upstream_unavailable"
    assert record["upstream_status"] is None
    assert record["outcome"] == "repaired"  # what the policy did; status says how it ended


def test_a_history_that_is_not_a_list_of_objects_is_rejected_and_recorded(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    body = {"model": "gpt-4o", "messages": [USER, "not an object"]}
    response = chat(http, proxy, body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages[1]"
    record = stored(proxy, response.headers["x-toolcall-guard-record"])
    assert record["outcome"] == "rejected"
    assert record["received"] == body
    assert record["status"] == 400
    assert [f["rule"] for f in record["findings"]] == ["malformed_history"]
    assert upstreams["openai"].chats() == []


def test_a_mode_header_the_config_does_not_allow_is_ignored_and_said_so(
    http: httpx.Client, proxy: Proxy
) -> None:
    response = chat(
        http, proxy, {"model": "gpt-4o", "messages": ORPHAN}, **{"x-toolcall-guard-mode": "off"}
    )
    assert response.status_code == 200
    assert response.headers["x-toolcall-guard-outcome"] == "repaired"  # the mode was not applied
    assert "allow_mode_header" in response.headers["x-toolcall-guard-mode-ignored"]
    clean = chat(http, proxy, {"model": "gpt-4o", "messages": [USER]})
    assert "x-toolcall-guard-mode-ignored" not in clean.headers


def test_a_gzip_body_is_checked_and_a_clean_one_forwarded_as_sent(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    raw = gzip.compress(orjson.dumps({"model": "gpt-4o", "messages": [USER]}))
    response = http.post(
        proxy.v1 + "/chat/completions",
        content=raw,
        headers={"content-encoding": "gzip", "content-type": "application/json"},
    )
    # The emulator, like OpenAI, reads no gzip body: its 400 says what it got, our bytes.
    assert response.headers["x-toolcall-guard-outcome"] == "clean"
    [sent] = upstreams["openai"].chats()
    assert sent.body == raw
    assert sent.headers["content-encoding"] == "gzip"


def test_a_repaired_deflate_body_goes_out_as_plain_json(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    raw = zlib.compress(orjson.dumps({"model": "gpt-4o", "messages": ORPHAN}))
    response = http.post(
        proxy.v1 + "/chat/completions", content=raw, headers={"content-encoding": "deflate"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-toolcall-guard-outcome"] == "repaired"
    [sent] = upstreams["openai"].chats()
    assert "content-encoding" not in sent.headers
    assert orjson.loads(sent.body)["messages"][0] == USER


def test_other_encodings_get_a_clear_415_and_bombs_a_413(http: httpx.Client, proxy: Proxy) -> None:
    brotli = http.post(
        proxy.v1 + "/chat/completions", content=b"\x0b\x02", headers={"content-encoding": "br"}
    )
    assert brotli.status_code == 415
    assert brotli.json()["error"]["code"] == "unsupported_content_encoding"
    bomb = gzip.compress(b"[" * 50_000_000)
    big = http.post(
        proxy.v1 + "/chat/completions", content=bomb, headers={"content-encoding": "gzip"}
    )
    assert big.status_code == 413
    assert "decompressed" in big.json()["error"]["message"]
