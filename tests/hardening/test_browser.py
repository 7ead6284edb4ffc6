"""No web page can drive the proxy (issue 24, item 2): DNS rebinding (a foreign ``Host``),
cross-origin and form-typed posts, preflights relayed with the key, upstream CORS headers.

Every attack runs against a real proxy over a socket; the upstream records what reached it, so
"refused" also means "nothing was sent upstream with the injected key".
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx
import orjson
import pytest

from proxy.api.browser import BrowserGuard
from proxy.settings import ServerSettings
from tests.hardening.conftest import CLEAN, Conn, Guard, RawUpstream, chat, response

INJECTED = "sk-SECRET-browser-test-0b1c2d3e"
#: An upstream as permissive as some are: it allows any origin to read its answers.
CORS = (b"access-control-allow-origin: *", b"access-control-allow-headers: *")


async def permissive(conn: Conn) -> None:
    await conn.request()
    body = b'{"id":"x","object":"chat.completion","choices":[]}'
    await conn.send(response(b"200 OK", body, headers=CORS))


@pytest.fixture
def upstream(raw_upstream: Callable[..., RawUpstream]) -> RawUpstream:
    return raw_upstream(permissive)


@pytest.fixture
def keyed(
    start_guard: Callable[..., Guard], upstream: RawUpstream, monkeypatch: pytest.MonkeyPatch
) -> Guard:
    """A loopback proxy that injects a provider key: what a page would love to spend."""
    monkeypatch.setenv("TCG_TEST_BROWSER_KEY", INJECTED)
    return start_guard(
        {"openai": upstream.url}, upstream_overrides={"api_key_env": "TCG_TEST_BROWSER_KEY"}
    )


def _port(guard: Guard) -> str:
    return guard.url.rsplit(":", 1)[1]


def _error(answer: httpx.Response) -> str:
    return str(answer.json()["error"]["code"])


# --- DNS rebinding: a foreign Host on a loopback bind ----------------------------------------


@pytest.mark.parametrize("name", ["evil.example", "192.168.1.10", "localhost.evil.example"])
def test_foreign_names_are_refused(keyed: Guard, http: httpx.Client, name: str) -> None:
    assert http.get(keyed.url + "/v1/models", headers={"host": name}).status_code == 403


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/repairs"), ("DELETE", "/repairs?before=2999-01-01T00:00:00Z"), ("GET", "/ui")],
    ids=["read-repairs", "delete-repairs", "viewer"],
)
def test_a_rebound_name_is_refused_on_loopback(
    keyed: Guard, http: httpx.Client, method: str, path: str
) -> None:
    foreign = {"host": f"evil.example:{_port(keyed)}"}
    answer = http.request(method, keyed.url + path, headers=foreign)
    assert answer.status_code == 403
    assert _error(answer) == "host_not_allowed"


def test_a_rebound_name_never_reaches_the_upstream_with_the_key(
    keyed: Guard, upstream: RawUpstream, http: httpx.Client
) -> None:
    answer = http.post(
        keyed.v1 + "/chat/completions",
        content=chat(CLEAN),
        headers={"host": "evil.example", "content-type": "application/json"},
    )
    assert answer.status_code == 403
    assert upstream.requests == []


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST", "127.0.0.2"])
def test_names_no_page_can_rebind_are_served_with_any_port(
    keyed: Guard, http: httpx.Client, name: str
) -> None:
    for host in (name, f"{name}:{_port(keyed)}", f"{name}:1"):
        assert http.get(keyed.url + "/repairs", headers={"host": host}).status_code == 200


@pytest.mark.parametrize("name", ["rebind", "proxy", "a.localhost", "127.0.0.1.evil.example"])
def test_a_dotless_or_other_name_cannot_read_the_log_on_loopback(
    keyed: Guard, http: httpx.Client, name: str
) -> None:
    """Issue 35 finding 4: a page reached by a dotless name (``rebind``) that resolves to
    127.0.0.1 sends ``Host: rebind:PORT`` and an ``Origin`` to match: same origin to the browser,
    so only the Host check stands between it and the log."""
    host = f"{name}:{_port(keyed)}"
    headers = {"host": host, "origin": f"http://{host}"}
    for path in ("/repairs", "/repairs/stats", "/ui"):
        answer = http.get(keyed.url + path, headers=headers)
        assert answer.status_code == 403, (name, path)
        assert _error(answer) == "host_not_allowed"


def test_allowed_hosts_widen_the_loopback_names(
    start_guard: Callable[..., Guard], upstream: RawUpstream, http: httpx.Client
) -> None:
    guard = start_guard({"openai": upstream.url}, server={"allowed_hosts": ["guard.internal"]})
    assert http.get(guard.url + "/repairs", headers={"host": "guard.internal:8780"}).is_success
    assert http.get(guard.url + "/repairs", headers={"host": "evil.example"}).status_code == 403


def test_beyond_loopback_any_host_unless_listed(
    start_guard: Callable[..., Guard], upstream: RawUpstream, http: httpx.Client
) -> None:
    anyone = start_guard({"openai": upstream.url}, server={"host": "0.0.0.0"})
    assert http.get(anyone.url + "/healthz", headers={"host": "10.1.2.3:8780"}).is_success
    listed = start_guard(
        {"openai": upstream.url}, server={"host": "0.0.0.0", "allowed_hosts": ["guard.svc"]}
    )
    assert http.get(listed.url + "/ui", headers={"host": "guard.svc"}).is_success
    assert http.get(listed.url + "/ui", headers={"host": "10.1.2.3"}).status_code == 403
    # Kubernetes probes name the pod by its address: they are answered whatever the Host.
    assert http.get(listed.url + "/readyz", headers={"host": "10.1.2.3:8780"}).is_success


# --- cross-origin requests -----------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://evil.example", "content-type": "text/plain"},
        {"origin": "http://evil.example", "content-type": "application/json"},
        {"origin": "null", "content-type": "text/plain"},
        {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"},
    ],
    ids=["text-plain", "json", "origin-null", "sec-fetch-cross-site"],
)
def test_a_cross_origin_post_is_refused_and_not_forwarded(
    keyed: Guard,
    upstream: RawUpstream,
    http: httpx.Client,
    headers: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolcall_guard"):
        answer = http.post(keyed.v1 + "/chat/completions", content=chat(CLEAN), headers=headers)
    assert answer.status_code == 403
    assert _error(answer) in ("origin_not_allowed", "cross_site_request")
    assert upstream.requests == []
    # the operator hears of it: one line, the path quoted
    assert f"refused POST '/v1/chat/completions': {_error(answer)}" in caplog.text


def test_a_cross_origin_read_of_the_repair_log_is_refused(keyed: Guard, http: httpx.Client) -> None:
    answer = http.get(keyed.url + "/repairs", headers={"origin": "http://evil.example"})
    assert answer.status_code == 403
    assert "access-control-allow-origin" not in answer.headers


def test_the_viewer_same_origin_still_works(keyed: Guard, http: httpx.Client) -> None:
    own = {"origin": keyed.url, "sec-fetch-site": "same-origin"}
    assert http.get(keyed.url + "/ui/", headers={"sec-fetch-site": "none"}).status_code == 200
    assert http.get(keyed.url + "/repairs", headers=own).status_code == 200
    cutoff = "/repairs?before=2000-01-01T00:00:00Z"
    assert http.delete(keyed.url + cutoff, headers=own).status_code == 200


def test_a_link_from_elsewhere_still_opens_the_viewer(keyed: Guard, http: httpx.Client) -> None:
    navigation = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    assert http.get(keyed.url + "/ui/", headers=navigation).status_code == 200


def test_a_browser_post_must_be_json(
    keyed: Guard, upstream: RawUpstream, http: httpx.Client
) -> None:
    same = {"origin": keyed.url, "sec-fetch-site": "same-origin"}
    answer = http.post(
        keyed.v1 + "/chat/completions",
        content=chat(CLEAN),
        headers={**same, "content-type": "text/plain"},
    )
    assert answer.status_code == 415
    assert _error(answer) == "unsupported_content_type"
    assert upstream.requests == []


@pytest.mark.parametrize(
    "content_type",
    [None, "application/x-www-form-urlencoded", "application/json; charset=utf-8"],
    ids=["none", "curl-d", "json-charset"],
)
def test_clients_that_are_not_browsers_post_as_today(
    keyed: Guard, upstream: RawUpstream, http: httpx.Client, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"content-type": content_type}
    answer = http.post(keyed.v1 + "/chat/completions", content=chat(CLEAN), headers=headers)
    assert answer.status_code == 200
    assert len(upstream.requests) == 1


# --- preflights and CORS headers -----------------------------------------------------------


def test_options_is_answered_locally_never_relayed(
    keyed: Guard, upstream: RawUpstream, http: httpx.Client
) -> None:
    answer = http.options(keyed.v1 + "/chat/completions")
    assert answer.status_code == 204
    assert "POST" in answer.headers["allow"]
    assert not any(name.startswith("access-control-") for name in answer.headers)
    preflight = {"origin": "http://evil.example", "access-control-request-method": "POST"}
    assert http.options(keyed.v1 + "/chat/completions", headers=preflight).status_code == 403
    assert upstream.requests == []


def test_upstream_cors_headers_are_never_relayed(keyed: Guard, http: httpx.Client) -> None:
    answer = http.post(
        keyed.v1 + "/chat/completions",
        content=chat(CLEAN),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 200
    assert not any(name.startswith("access-control-") for name in answer.headers)


def test_an_allowed_origin_gets_cors_from_the_proxy(
    start_guard: Callable[..., Guard], upstream: RawUpstream, http: httpx.Client
) -> None:
    app = "https://app.example"
    guard = start_guard({"openai": upstream.url}, server={"allowed_origins": [app]})
    preflight = http.options(
        guard.v1 + "/chat/completions",
        headers={
            "origin": app,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == app
    assert "content-type" in preflight.headers["access-control-allow-headers"]
    answer = http.post(
        guard.v1 + "/chat/completions",
        content=chat(CLEAN),
        headers={"origin": app, "content-type": "application/json"},
    )
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == app  # the proxy's, not the upstream's
    assert orjson.loads(answer.content)["object"] == "chat.completion"
    assert [r.line.split(b" ")[0] for r in upstream.requests] == [b"POST"]


async def html_error_page(conn: Conn) -> None:
    await conn.request()
    page = b"<html><script>alert(1)</script></html>"
    head = b"HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\n"
    await conn.send(head + b"content-length: %d\r\nconnection: close\r\n\r\n" % len(page) + page)


def test_an_upstream_error_page_is_never_sniffed(
    start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream], http: httpx.Client
) -> None:
    guard = start_guard({"openai": raw_upstream(html_error_page).url})
    answer = http.get(guard.v1 + "/models")
    assert answer.status_code == 502
    assert answer.headers["content-type"] == "text/html"
    assert answer.headers.get_list("x-content-type-options") == ["nosniff"]


@pytest.mark.parametrize(
    "path",
    [
        "/repairs",
        "/repairs/stats",
        "/repairs/nope",
        "/repairs?limit=0",
        "/healthz",
        "/readyz",
        "/metrics",
        "/ui",
        "/nowhere",
        "/nowhere/v1/chat/completions",
    ],
)
def test_every_answer_of_the_proxy_says_nosniff_once(
    keyed: Guard, http: httpx.Client, path: str
) -> None:
    """Issue 35 finding 6: the proxy's own answers (records, probes, metrics, the viewer, its
    404s and errors) are never sniffed into a page either."""
    answer = http.get(keyed.url + path)
    assert answer.headers.get_list("x-content-type-options") == ["nosniff"], answer.status_code


def test_host_decisions_are_remembered_within_a_bound() -> None:
    guard = BrowserGuard(ServerSettings())
    for n in range(1000):  # a flood of names: each refused, the memory bounded
        scope = {"method": "GET", "path": "/repairs", "headers": [(b"host", b"e%d.example" % n)]}
        assert guard.refusal(scope) is not None
    assert len(guard.seen) <= 256
    assert (
        guard.refusal({"method": "GET", "path": "/", "headers": [(b"host", b"localhost")]}) is None
    )
