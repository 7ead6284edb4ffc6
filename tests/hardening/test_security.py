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
    eventually(lambda: writer.health.written == count, what=f"{count} records written")
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


# --- issue 35: a key stays with its owner ----------------------------------------------------

MESSAGES = orjson.dumps(
    {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
)
#: A request of every kind a client key can arrive on: Messages, count_tokens, chat, a relayed
#: path (with Google's ``?key=``).
KEYED_PATHS = [
    ("/v1/messages", MESSAGES),
    ("/v1/messages/count_tokens", MESSAGES),
    ("/v1/chat/completions", chat(CLEAN)),
    ("/v1/embeddings?alt=sse&key={key}", b"{}"),
]


def _seen(upstream: RawUpstream) -> str:
    """Everything the upstream was sent but the bodies: request lines and header values."""
    return "\n".join(r.line.decode("latin-1") + repr(r.headers) for r in upstream.requests)


@pytest.fixture
def recording(raw_upstream: Callable[..., RawUpstream]) -> RawUpstream:
    async def ok(conn: Conn) -> None:
        await conn.request()
        await conn.send(response())

    return raw_upstream(ok)


def test_a_client_key_never_reaches_an_upstream_in_any_carrier(
    start_guard: Callable[..., Guard],
    recording: RawUpstream,
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding 1: the Anthropic SDK with both its variables set sends the client key as
    ``Authorization: Bearer`` and as ``x-api-key``; other clients in ``api-key``,
    ``x-goog-api-key`` or ``?key=``. None of them is forwarded; a key that is not a client key
    (the client's own provider key) still is."""
    monkeypatch.setenv("TCG_TEST_CLIENT_KEYS", f"{CLIENT_KEY},ck-other-tenant")
    guard = start_guard(
        {"openai": recording.url},
        server={"client_keys_env": "TCG_TEST_CLIENT_KEYS"},
        upstream_overrides={"anthropic_base_url": recording.url},
    )
    every = {
        "authorization": f"Bearer {CLIENT_KEY}",
        "x-api-key": CLIENT_KEY,
        "api-key": CLIENT_KEY,
        "x-goog-api-key": CLIENT_KEY,
        "content-type": "application/json",
    }
    for path, body in KEYED_PATHS:
        answer = http.post(guard.url + path.format(key=CLIENT_KEY), content=body, headers=every)
        assert answer.status_code == 200, (path, answer.text)
    # x-api-key alone (an Anthropic client with only ANTHROPIC_API_KEY set) on Messages.
    alone = {"x-api-key": CLIENT_KEY, "content-type": "application/json"}
    assert http.post(guard.v1 + "/messages", content=MESSAGES, headers=alone).status_code == 200
    # The client's own provider key beside its client key is the upstream's: it goes on.
    own = {"authorization": "Bearer ck-other-tenant", "x-api-key": "sk-ant-own-provider-key"}
    assert http.post(guard.v1 + "/messages", content=MESSAGES, headers=own).status_code == 200
    assert len(recording.requests) == len(KEYED_PATHS) + 2
    seen = _seen(recording)
    for secret in (CLIENT_KEY, "ck-other-tenant"):
        assert secret not in seen
    assert recording.requests[-1].headers["x-api-key"] == "sk-ant-own-provider-key"
    assert b"alt=sse" in recording.requests[3].line  # the other parameters stay


def test_no_key_of_the_client_reaches_an_upstream_the_proxy_keys(
    start_guard: Callable[..., Guard],
    recording: RawUpstream,
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding 1: where the proxy injects its key, every carrier of the family is replaced or
    removed (``api-key`` and ``x-goog-api-key`` passed through before)."""
    monkeypatch.setenv("TCG_TEST_INJECTED_KEY", INJECTED)
    guard = start_guard(
        {"keyed": recording.url},
        upstream_overrides={"api_key_env": "TCG_TEST_INJECTED_KEY"},
        routing={"default": "keyed"},
    )
    every = {**KEY_HEADERS, "x-api-key": API_KEY, "content-type": "application/json"}
    for path, body in (("/v1/chat/completions", chat(CLEAN)), KEYED_PATHS[3]):
        answer = http.post(guard.url + path.format(key=GOOG), content=body, headers=every)
        assert answer.status_code == 200
    seen = _seen(recording)
    for secret in (AUTH, API_KEY, GOOG):
        assert secret not in seen
    for request in recording.requests:
        assert request.headers["authorization"] == f"Bearer {INJECTED}"
        assert not {"x-api-key", "api-key", "x-goog-api-key"} & request.headers.keys()
    assert recording.requests[1].line.split(b" ")[1].endswith(b"/embeddings?alt=sse")


async def _cookie_jar(conn: Conn) -> None:
    await conn.request()
    cookies = (b"set-cookie: session=upstream-secret; Path=/", b"Set-Cookie: b=2")
    await conn.send(response(headers=cookies))


def test_an_upstreams_cookies_never_reach_a_client(
    start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream], http: httpx.Client
) -> None:
    guard = start_guard({"openai": raw_upstream(_cookie_jar).url})
    for path in ("/chat/completions", "/models"):
        answer = http.post(guard.v1 + path, content=chat(CLEAN))
        assert answer.status_code == 200
        assert "set-cookie" not in answer.headers
        assert not answer.cookies


# --- issue 35 finding 5: records stay with the client key that sent them --------------------


def _as(key: str | None) -> dict[str, str]:
    return {} if key is None else {"authorization": f"Bearer {key}"}


@pytest.mark.parametrize("admin", [False, True], ids=["no-admin-token", "admin-token"])
def test_a_client_key_reads_its_own_records_only(
    start_guard: Callable[..., Guard],
    recording: RawUpstream,
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
    admin: bool,
) -> None:
    """On loopback, no admin token: a caller with no key, or another tenant, read tenant A's
    records before. Now a client key reads its own (list, stats, one record, at once and once
    written), the admin token all, anyone else nothing."""
    monkeypatch.setenv("TCG_TEST_CLIENT_KEYS", f"{CLIENT_KEY},ck-tenant-b")
    monkeypatch.setenv("TCG_TEST_ADMIN", "admin-token-0123456789")
    server = {"client_keys_env": "TCG_TEST_CLIENT_KEYS"}
    if admin:
        server["admin_token_env"] = "TCG_TEST_ADMIN"
    guard = start_guard({"openai": recording.url}, server=server)
    sent = http.post(guard.v1 + "/chat/completions", content=chat(ORPHAN), headers=_as(CLIENT_KEY))
    record = sent.headers["x-toolcall-guard-record"]
    other = http.post(
        guard.v1 + "/chat/completions", content=chat(ORPHAN), headers=_as("ck-tenant-b")
    )
    assert other.status_code == 200

    writer = guard.app.state.writer
    for moment in ("at once", "written"):
        if moment == "written":
            eventually(lambda: writer.health.written == 2, what="both records written")
        for stranger in (None, "ck-tenant-b", "not-a-key", "admin-token-0123456789"):
            if stranger == "admin-token-0123456789" and admin:
                continue
            one = http.get(f"{guard.url}/repairs/{record}", headers=_as(stranger))
            assert one.status_code == (404 if stranger == "ck-tenant-b" else 401), stranger
            assert "Read a.txt" not in one.text
        mine = http.get(f"{guard.url}/repairs/{record}", headers=_as(CLIENT_KEY))
        assert mine.status_code == 200
        assert mine.json()["received"]["messages"][0]["content"] == "Read a.txt"
    for key, count in ((CLIENT_KEY, 1), ("ck-tenant-b", 1)):
        page = http.get(guard.url + "/repairs", headers=_as(key)).json()["data"]
        assert len(page) == count
        assert (record in [r["id"] for r in page]) == (key == CLIENT_KEY)
        stats = http.get(guard.url + "/repairs/stats", headers=_as(key)).json()
        assert stats["total"] == count
    for path in ("/repairs", "/repairs/stats"):
        assert http.get(guard.url + path).status_code == 401
    deleting = http.delete(
        guard.url + "/repairs?before=2999-01-01T00:00:00Z", headers=_as(CLIENT_KEY)
    )
    assert deleting.status_code == 403
    if admin:
        everyone = _as("admin-token-0123456789")
        assert len(http.get(guard.url + "/repairs", headers=everyone).json()["data"]) == 2
        assert http.get(f"{guard.url}/repairs/{record}", headers=everyone).status_code == 200
        assert http.get(guard.url + "/repairs/stats", headers=everyone).json()["total"] == 2


def test_a_google_client_may_send_its_client_key_as_a_query_parameter(
    start_guard: Callable[..., Guard],
    recording: RawUpstream,
    http: httpx.Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gemini's clients send their key as ``x-goog-api-key`` or ``?key=``: a client key there
    is accepted, and never forwarded."""
    monkeypatch.setenv("TCG_TEST_CLIENT_KEYS", CLIENT_KEY)
    guard = start_guard(
        {"openai": recording.url},
        server={"client_keys_env": "TCG_TEST_CLIENT_KEYS"},
        upstream_overrides={"gemini_base_url": recording.url.removesuffix("/v1")},
    )
    path = "/v1beta/models/gemini-2.5-pro:countTokens"
    body = orjson.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    for query, header in ((f"?key={CLIENT_KEY}&x=1", {}), ("?x=1", {"x-goog-api-key": CLIENT_KEY})):
        answer = http.post(guard.url + path + query, content=body, headers=header)
        assert answer.status_code == 200, answer.text
    refused = http.post(guard.url + path + "?key=wrong", content=body)
    assert refused.status_code == 401
    assert "?key=" in refused.text
    assert len(recording.requests) == 2
    assert CLIENT_KEY not in _seen(recording)
    assert all(r.line.split(b" ")[1].endswith(b":countTokens?x=1") for r in recording.requests)


def test_a_nested_credential_is_never_served_back_by_the_record(
    start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream], http: httpx.Client
) -> None:
    """Finding 3: full capture kept ``mcp_servers[].authorization_token`` and served it back
    at ``GET /repairs/{id}``; no field named as a credential is stored, at any depth."""

    async def refuse(conn: Conn) -> None:
        await conn.request()
        await conn.send(response(b"400 Bad Request", b'{"error":{"message":"no"}}'))

    guard = start_guard(
        {"openai": raw_upstream(refuse).url},
        upstream_overrides={"anthropic_base_url": raw_upstream(refuse).url},
    )
    body = orjson.loads(MESSAGES)
    body["mcp_servers"] = [
        {"type": "url", "url": "https://mcp.example/sse", "authorization_token": "SECRET-mcp-1"}
    ]
    body["metadata"] = {"headers": {"Authorization": "Bearer SECRET-2", "db_password": "S-3"}}
    sent = http.post(guard.v1 + "/messages", content=orjson.dumps(body))
    assert sent.status_code == 400
    record = sent.headers["x-toolcall-guard-record"]
    writer = guard.app.state.writer
    for moment in ("at once", "written"):
        if moment == "written":
            eventually(lambda: writer.health.written == 1, what="the refusal's record")
        full = http.get(f"{guard.url}/repairs/{record}")
        assert full.status_code == 200
        assert full.json()["received"]["mcp_servers"] == [
            {"type": "url", "url": "https://mcp.example/sse"}
        ]
        for secret in ("SECRET-mcp-1", "SECRET-2", "S-3"):
            assert secret not in full.text
