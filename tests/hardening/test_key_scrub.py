"""The key the proxy injects never comes back (issue 24 item 7), over real sockets.

An upstream that quotes its ``Authorization`` in a 4xx, in another letter case or in a gzip'd
body, gets the key replaced in the answer relayed to the client and in the record; a body in
an encoding the proxy cannot read is withheld.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Callable

import httpx
import orjson
import pytest

from proxy.relay.mask import KeyMask
from tests.hardening.conftest import (
    CLEAN,
    SSE_HEAD,
    Conn,
    Guard,
    RawUpstream,
    chat,
    chunk,
    eventually,
    response,
)

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
    eventually(lambda: writer.health.written == 1, what="the refusal's record")
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


# --- issue 35 finding 2: the key quoted in a 200's stream -----------------------------------


def streaming_quote(released: threading.Event) -> Callable[[Conn], object]:
    """A 200 event stream whose error event quotes the key it got, in three letter cases, the
    first copy split across two chunks; the second part waits for ``released`` (the client
    has the first event: nothing was buffered)."""

    async def behave(conn: Conn) -> None:
        request = await conn.request()
        key = request.headers.get("x-api-key") or request.headers["authorization"][7:]
        first = b'event: message_start\ndata: {"type":"message_start"}\n\n'
        said = f"Incorrect API key provided: {key} / {key.upper()} / {key.lower()}"
        event = b"event: error\ndata: " + orjson.dumps(
            {"type": "error", "error": {"type": "authentication_error", "message": said}}
        )
        cut = event.index(key.encode()) + 7  # a key that straddles two chunks
        await conn.send(SSE_HEAD + chunk(first))
        for _ in range(500):  # until the client read the first event, 5 s at most
            if released.is_set():
                break
            await asyncio.sleep(0.01)
        await conn.send(chunk(event[:cut]), pause=0.05)
        await conn.send(chunk(event[cut:] + b"\n\n") + b"0\r\n\r\n")

    return behave


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions"])
def test_the_injected_key_is_masked_in_a_streamed_answer_as_it_streams(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    released = threading.Event()
    upstream = raw_upstream(streaming_quote(released))
    monkeypatch.setenv("TCG_TEST_SCRUB_KEY", INJECTED)
    guard = start_guard(
        {"keyed": upstream.url},
        upstream_overrides={
            "api_key_env": "TCG_TEST_SCRUB_KEY",
            "anthropic_base_url": upstream.url,
        },
        routing={"default": "keyed"},
    )
    body = {"model": "m", "max_tokens": 8, "stream": True, "messages": CLEAN}
    with http.stream("POST", guard.url + path, content=orjson.dumps(body)) as answer:
        assert answer.status_code == 200
        lines = answer.iter_lines()
        assert next(lines) == "event: message_start"  # before the upstream sent the rest
        released.set()
        text = "\n".join(lines)
    assert "Incorrect API key provided: [redacted]" in text
    assert text.count("[redacted]") == 3
    for variant in VARIANTS:
        assert variant not in text
    writer = guard.app.state.writer
    eventually(lambda: writer.health.written == 1, what="the stream error's record")
    [record] = http.get(guard.url + "/repairs").json()["data"]
    full = http.get(f"{guard.url}/repairs/{record['id']}").text
    for variant in VARIANTS:
        assert variant not in full


async def gzip_quote(conn: Conn) -> None:
    request = await conn.request()
    assert request.headers["accept-encoding"] == "gzip"  # only what the proxy reads
    key = request.headers["authorization"][7:]
    said = orjson.dumps({"id": "x", "note": f"your key is {key.upper()}"})
    await conn.send(response(b"200 OK", gzip.compress(said), (b"content-encoding: gzip",)))


def test_the_injected_key_is_masked_in_a_compressed_answer(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TCG_TEST_SCRUB_KEY", INJECTED)
    guard = start_guard(
        {"keyed": raw_upstream(gzip_quote).url},
        upstream_overrides={"api_key_env": "TCG_TEST_SCRUB_KEY"},
        routing={"default": "keyed"},
    )
    headers = {"accept-encoding": "gzip, br, zstd"}
    answer = http.post(guard.v1 + "/chat/completions", content=chat(CLEAN), headers=headers)
    assert answer.status_code == 200
    assert "content-encoding" not in answer.headers  # relayed decoded, checked
    assert answer.json()["note"].startswith("your key is [redacted]")
    assert INJECTED.lower() not in answer.text.lower()


def test_a_key_split_anywhere_is_masked_and_nothing_else_waits() -> None:
    """The stream mask, alone: every split of a body into chunks gives the same bytes as the
    whole body masked, and a chunk that cannot end in a key's start is not held back."""
    key = INJECTED.encode()
    body = b"data: a " + key + b" b " + key.lower() + b"\n\n" + key[:5] + b"x" + key.upper()
    whole = KeyMask([key])
    expected = whole.feed(body) + whole.flush()
    assert key.lower() not in expected.lower()
    assert len(expected) == len(body)  # same length: a content-length stays true
    for cut in range(len(body)):
        for step in (1, 7):
            mask = KeyMask([key])
            parts = [body[:cut]] + [body[i : i + step] for i in range(cut, len(body), step)]
            assert b"".join(mask.feed(p) for p in parts) + mask.flush() == expected
    mask = KeyMask([key])
    assert mask.feed(b"event: ping\ndata: {}\n\n") == b"event: ping\ndata: {}\n\n"
    assert mask.feed(b"quoted: sk-Inj") == b"quoted: "  # may be the key's start: held
    assert mask.feed(b"ected") + mask.flush() == b"sk-Injected"  # it was not
