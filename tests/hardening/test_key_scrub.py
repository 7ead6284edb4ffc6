"""The key the proxy injects never comes back (issue 24 item 7), over real sockets.

An upstream that quotes its ``Authorization`` in a 4xx, in another letter case or in a gzip'd
body, gets the key replaced in the answer relayed to the client and in the record; a body in
an encoding the proxy cannot read is withheld.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable

import httpx
import orjson
import pytest

from tests.hardening.conftest import CLEAN, Conn, Guard, RawUpstream, chat, eventually, response

INJECTED = "sk-Injected-Key-0a1B2c3D4e"
VARIANTS = (INJECTED, INJECTED.upper(), INJECTED.lower())


def quoting(
    encoding: bytes | None, status: bytes = b"401 Unauthorized"
) -> Callable[[Conn], object]:
    """An upstream that answers ``status`` quoting the key it got, in three letter cases."""

    async def behave(conn: Conn) -> None:
        request = await conn.request()
        key = request.headers["authorization"].removeprefix("Bearer ")
        said = f"Incorrect API key provided: {key} / {key.upper()} / {key.lower()}"
        body = orjson.dumps({"error": {"message": said, "code": "invalid_api_key"}})
        headers: tuple[bytes, ...] = ()
        if encoding == b"gzip":
            body, headers = gzip.compress(body), (b"content-encoding: gzip",)
        elif encoding is not None:
            body, headers = b"\x1b\x00" + body, (b"content-encoding: " + encoding,)
        await conn.send(response(status, body, headers))

    return behave


@pytest.mark.parametrize("encoding", [None, b"gzip"], ids=["plain", "gzip"])
def test_the_injected_key_is_scrubbed_in_any_case_from_the_answer_and_the_record(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
    encoding: bytes | None,
) -> None:
    upstream = raw_upstream(quoting(encoding))
    monkeypatch.setenv("TCG_TEST_SCRUB_KEY", INJECTED)
    guard = start_guard(
        {"keyed": upstream.url},
        upstream_overrides={"api_key_env": "TCG_TEST_SCRUB_KEY"},
        routing={"default": "keyed"},
    )
    headers = {"content-type": "application/json", "accept-encoding": "gzip"}
    for path in ("/v1/chat/completions", "/v1/models"):  # a unit, and a path relayed untouched
        answer = http.post(guard.url + path, content=chat(CLEAN), headers=headers)
        assert answer.status_code == 401
        assert answer.json()["error"]["message"].count("[redacted]") == 3
        for variant in VARIANTS:
            assert variant not in answer.text
    writer = guard.app.state.writer
    eventually(lambda: writer.written == 1, what="the refusal's record")
    [record] = http.get(guard.url + "/repairs?limit=5").json()["data"]
    full = http.get(f"{guard.url}/repairs/{record['id']}").text
    assert "[redacted]" in full
    for variant in VARIANTS:
        assert variant not in full


def test_an_error_body_the_proxy_cannot_read_is_withheld(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    upstream = raw_upstream(quoting(b"br"))
    monkeypatch.setenv("TCG_TEST_SCRUB_KEY", INJECTED)
    guard = start_guard(
        {"keyed": upstream.url},
        upstream_overrides={"api_key_env": "TCG_TEST_SCRUB_KEY"},
        routing={"default": "keyed"},
    )
    answer = http.post(guard.url + "/v1/chat/completions", content=chat(CLEAN))
    assert answer.status_code == 401
    assert "content-encoding" not in answer.headers
    assert answer.json()["error"]["code"] == "upstream_error_withheld"


def test_a_server_error_quoting_the_key_is_scrubbed_too(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    upstream = raw_upstream(quoting(None, b"500 Internal Server Error"))
    monkeypatch.setenv("TCG_TEST_SCRUB_KEY", INJECTED)
    guard = start_guard(
        {"keyed": upstream.url},
        upstream_overrides={"api_key_env": "TCG_TEST_SCRUB_KEY"},
        routing={"default": "keyed"},
    )
    answer = http.post(guard.url + "/v1/chat/completions", content=chat(CLEAN))
    assert answer.status_code == 500
    assert INJECTED.lower() not in answer.text.lower()
