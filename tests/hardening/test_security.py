"""Keys stay secret (no Authorization, api-key, x-goog-api-key or injected key in a record, a
log line or an error), and client keys hold on every proxied path.

(Admin endpoints locked beyond loopback: :mod:`tests.hardening.test_admin_api`; routing and
request ids: :mod:`tests.hardening.test_steering`.)
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from tests.hardening.conftest import (
    CLEAN,
    ORPHAN,
    Conn,
    Guard,
    Lines,
    RawUpstream,
    chat,
    closed_port_url,
    eventually,
    response,
)


async def echo_headers(conn: Conn) -> None:
    """An upstream that quotes every request header in its 400 error (some do quote keys)."""
    request = await conn.request()
    quoted = "; ".join(f"{k}={v}" for k, v in request.headers.items())
    body = orjson.dumps({"error": {"message": f"bad request, you sent: {quoted}"}})
    await conn.send(response(b"400 Bad Request", body))


# --- no key in a record, a log line or an error --------------------------------------------

AUTH = "sk-SECRET-authorization-7f3a9c1d"
API_KEY = "SECRET-api-key-4b8e2177"
GOOG = "SECRET-goog-key-9d2c5503"
INJECTED = "sk-SECRET-injected-e1f0aa42"
CLIENT_KEY = "ck-SECRET-client-key-5a6b7c8d"
SECRETS = (AUTH, API_KEY, GOOG, INJECTED, CLIENT_KEY)
KEY_HEADERS = {"authorization": f"Bearer {AUTH}", "api-key": API_KEY, "x-goog-api-key": GOOG}


def test_no_key_in_any_record_log_line_or_error(
    *,
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    emulator: str,
    http: httpx.Client,
    lines: Lines,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TCG_TEST_INJECTED_KEY", INJECTED)
    echo = raw_upstream(echo_headers)
    guard = start_guard(
        {"openai": emulator, "echo": echo.url, "keyed": echo.url, "down": closed_port_url()},
        server={"log_contents": True, "max_body_bytes": 4096, "log_level": "debug"},
    )
    keyed = start_guard(
        {"keyed": echo.url},
        upstream_overrides={"api_key_env": "TCG_TEST_INJECTED_KEY"},
        routing={"default": "keyed"},
    )
    monkeypatch.setenv("TCG_TEST_CLIENT_KEYS", CLIENT_KEY)
    locked = start_guard({"openai": emulator}, server={"client_keys_env": "TCG_TEST_CLIENT_KEYS"})

    ours: list[httpx.Response] = []  # answers the proxy wrote itself, or relayed from the emulator
    relayed: list[httpx.Response] = []  # the echoing upstream's own answers, relayed as they are

    def send(base: str, path: str, body: bytes, into: list[httpx.Response], **more: str) -> None:
        headers = {**KEY_HEADERS, "content-type": "application/json", **more}
        into.append(http.post(base + path, content=body, headers=headers))

    chat_path = "/v1/chat/completions"
    send(guard.url, chat_path, chat(ORPHAN), ours)  # repaired
    send(guard.url, chat_path, chat(ORPHAN, stream=True), ours)  # repaired, streamed
    send(guard.url, chat_path, chat([*CLEAN, {"role": "robot", "content": "x"}]), ours)  # rejected
    send(guard.url, "/down" + chat_path, chat(CLEAN), ours)  # 502
    send(guard.url, "/nowhere" + chat_path, chat(CLEAN), ours)  # 404
    send(guard.url, chat_path, chat(CLEAN), ours, **{"x-toolcall-guard-upstream": "elsewhere"})
    send(guard.url, chat_path, b'{"messages": [', ours)  # not JSON
    send(guard.url, chat_path, chat(CLEAN, pad="x" * 5000), ours)  # 413
    send(guard.url, "/echo" + chat_path, chat(CLEAN), relayed)  # upstream_rejected, quoting
    send(guard.url, "/echo" + chat_path, chat(ORPHAN), relayed)  # repaired, then rejected
    send(keyed.url, "/keyed" + chat_path, chat(CLEAN), relayed)  # quoting the injected key
    send(locked.url, chat_path, chat(ORPHAN), ours)  # wrong client key: 401
    send(locked.url, chat_path, chat(ORPHAN), ours, authorization=f"Bearer {CLIENT_KEY}")
    ours.append(http.get(guard.url + "/repairs/x", headers={"authorization": f"Bearer {AUTH}"}))

    assert [r.status_code for r in ours] == [200, 200, 400, 502, 404, 400, 400, 413, 401, 200, 404]
    assert [r.status_code for r in relayed] == [400, 400, 400]
    # The echo really quoted the keys it got: the records below had them to leak.
    assert AUTH in relayed[0].text
    assert API_KEY in relayed[0].text
    assert GOOG in relayed[0].text
    # ... except the key the proxy injected: never relayed back to the client (issue 24 item 7)
    assert INJECTED not in relayed[2].text
    assert "[redacted]" in relayed[2].text

    records = [_all_records(http, g, n) for g, n in ((guard, 5), (keyed, 1))]
    records.append(_all_records(http, locked, 1, CLIENT_KEY))  # its owner reads it
    upstream_errors = [r["upstream_error"] for r in records[0] + records[1] if r["upstream_error"]]
    assert len(upstream_errors) == 3
    assert all("[redacted]" in text for text in upstream_errors)

    haystacks = {
        "records": [orjson.dumps(r).decode() for r in records],
        "log lines": lines.rendered(),
        "errors and answers": [r.text + repr(r.headers.raw) for r in ours],
    }
    assert lines.records, "nothing was logged: the capture is broken"
    for where, texts in haystacks.items():
        for text in texts:
            for secret in SECRETS:
                assert secret not in text, f"{secret} found in {where}: {text[:300]}"


def _all_records(
    http: httpx.Client, guard: Guard, count: int, key: str | None = None
) -> list[dict[str, Any]]:
    """Every record of ``guard``'s log (once its ``count`` records are written), in full, as
    the admin (or the client ``key``) reads them."""
    writer = guard.app.state.writer
    eventually(lambda: writer.written == count, what=f"{count} records written")
    headers = {} if key is None else {"authorization": f"Bearer {key}"}
    page = http.get(guard.url + "/repairs", params={"limit": 500}, headers=headers)
    ids = [item["id"] for item in page.json()["data"]]
    return [http.get(f"{guard.url}/repairs/{i}", headers=headers).json() for i in ids]


# --- client keys ---------------------------------------------------------------------------


@pytest.fixture
def locked(
    start_guard: Callable[..., Guard],
    raw_upstream: Callable[..., RawUpstream],
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[Guard, RawUpstream]:
    async def ok(conn: Conn) -> None:
        await conn.request()
        await conn.send(response())

    upstream = raw_upstream(ok)
    monkeypatch.setenv("TCG_TEST_CLIENT_KEYS", f"{CLIENT_KEY},ck-other")
    guard = start_guard(
        {"openai": upstream.url}, server={"client_keys_env": "TCG_TEST_CLIENT_KEYS"}
    )
    return guard, upstream


PATHS = [
    ("POST", "/v1/chat/completions"),
    ("POST", "/openai/v1/chat/completions"),
    ("GET", "/v1/models"),
    ("POST", "/openai/v1/embeddings"),
    ("DELETE", "/v1/files/file-1"),
]


WRONG_KEYS = [
    None,
    "",
    "Bearer",
    CLIENT_KEY,
    f"Basic {CLIENT_KEY}",
    f"Bearer {CLIENT_KEY[:-1]}",
    f"Bearer {CLIENT_KEY}x",
    f"Bearer x{CLIENT_KEY}",
    f"Bearer {CLIENT_KEY.upper()}",
    f"Bearer {CLIENT_KEY},ck-other",
    "Bearer ck-other ck-other",
]


@pytest.mark.parametrize(("method", "path"), PATHS)
def test_client_keys_are_enforced_on_every_proxied_path(
    locked: tuple[Guard, RawUpstream], http: httpx.Client, method: str, path: str
) -> None:
    guard, upstream = locked
    for authorization in WRONG_KEYS:
        headers = {} if authorization is None else {"authorization": authorization}
        refused = http.request(method, guard.url + path, content=chat(CLEAN), headers=headers)
        assert refused.status_code == 401, authorization
        assert refused.json()["error"]["code"] == "invalid_api_key"
        assert CLIENT_KEY not in refused.text
    assert upstream.accepted == 0
    for key in (CLIENT_KEY, "ck-other"):
        right = {"authorization": f"bearer {key}"}
        assert http.request(method, guard.url + path, content=chat(CLEAN), headers=right).is_success
    assert all("authorization" not in r.headers for r in upstream.requests)  # ours, not theirs


def test_a_missing_client_key_is_refused_before_the_body_is_read(
    locked: tuple[Guard, RawUpstream],
) -> None:
    guard, upstream = locked
    host, port = guard.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-length: 999\r\n\r\n"
        )
        answer = sock.recv(65536)  # no body sent: the answer cannot have waited for it
    assert answer.startswith(b"HTTP/1.1 401 ")
    assert upstream.accepted == 0
