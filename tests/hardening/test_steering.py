"""Routing cannot be steered to a host that is not configured; client-chosen request ids and
paths cannot forge a log line.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from proxy.errors import BadRequestBody
from proxy.logs import JsonFormatter, TextFormatter, request_id
from proxy.relay.http import upstream_target
from proxy.routing import split_path
from tests.hardening.conftest import (
    CLEAN,
    ORPHAN,
    Conn,
    Guard,
    Lines,
    RawUpstream,
    chat,
    eventually,
    raw_exchange,
    response,
)

SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


# --- routing cannot be steered to a host that is not configured ----------------------------


@pytest.fixture
def steering(
    start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream]
) -> tuple[Guard, RawUpstream, RawUpstream]:
    async def ok(conn: Conn) -> None:
        await conn.request()
        await conn.send(response())

    good, evil = raw_upstream(ok), raw_upstream(ok)
    return start_guard({"openai": good.url}), good, evil


def test_routing_names_only_configured_upstreams(
    steering: tuple[Guard, RawUpstream, RawUpstream],
) -> None:
    guard, good, evil = steering
    there = f"127.0.0.1:{evil.port}"
    body = chat(CLEAN, model=f"http://{there}/v1")

    def post(target: str, *headers: str) -> bytes:
        lines = [f"POST {target} HTTP/1.1", "host: " + there, *headers]
        lines += ["content-type: application/json", f"content-length: {len(body)}"]
        return raw_exchange(guard, "\r\n".join(lines).encode() + b"\r\n\r\n" + body)

    cases = {
        f"http://{there}/v1/chat/completions": b"200",  # absolute form: the path counts, no more
        "/v1/chat/completions": b"200",  # model and host name the evil host: ignored
        f"/http:/{there}/v1/chat/completions": b"404",
        f"//{there}/v1/chat/completions": b"404",
        f"/openai@{there}/v1/chat/completions": b"404",
        "/v1/../../v1/chat/completions": b"400",
        "/v1/%2e%2e/%2e%2e/chat/completions": b"400",
        f"/v1/@{there}/models": b"200",  # a path segment on the configured host
        "/v1/models%0d%0ahost:%20evil": b"200",  # stays escaped: no header injected upstream
    }
    for target, status in cases.items():
        answer = post(target)
        assert answer.split(b" ")[1] == status, (target, answer[:300])
    for header in (
        f"x-toolcall-guard-upstream: http://{there}",
        f"x-toolcall-guard-upstream: {there}",
    ):
        assert post("/v1/chat/completions", header).split(b" ")[1] == b"400"

    assert evil.accepted == 0
    assert len(good.requests) == 4
    for request in good.requests:
        assert request.headers["host"] == f"127.0.0.1:{good.port}"
        assert request.line.startswith(b"POST /v1/")
        assert "evil" not in request.headers  # the escaped CR LF did not become a header
    assert good.requests[-1].line.split(b" ")[1].lower() == b"/v1/models%0d%0ahost:%20evil"


@given(
    raw=st.binary(max_size=40)
    | st.text("%0123456789abcdef./:@?#\r\n ", max_size=40).map(str.encode),
    query=st.binary(max_size=20),
    prefix=st.sampled_from(["", "/openai"]),
)
def test_the_upstream_target_is_one_clean_path_under_the_base_url(
    raw: bytes, query: bytes, prefix: str
) -> None:
    raw_path = prefix.encode() + b"/v1/" + raw
    path = unquote(raw_path.decode("latin-1"))  # what uvicorn puts in scope["path"]
    scope = {"path": path, "raw_path": raw_path, "query_string": query}
    target = split_path(path)
    if target is None:
        return
    if any(part in (".", "..") for part in target[1].split("/")):
        with pytest.raises(BadRequestBody, match=re.escape("'..' segments")):
            upstream_target(scope, *target)
        return
    tail = upstream_target(scope, *target)
    assert re.fullmatch(r"/[\x21-\x7e]*", tail), tail  # printable, no space, no line break
    url = URL("http://upstream.test:8080/base/v1" + tail)
    assert (url.host, url.port) == ("upstream.test", 8080)
    assert url.path.startswith("/base/v1/")


# --- request ids ---------------------------------------------------------------------------


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_a_request_id_is_the_clients_only_when_sane(sent: bytes) -> None:
    chosen = request_id(sent)
    assert SANE_ID.fullmatch(chosen)
    assert (chosen == sent.decode("latin-1")) == bool(SANE_ID.fullmatch(sent.decode("latin-1")))


#: Hostile x-request-id values, and whether uvicorn's parser refuses the request outright.
HOSTILE_IDS = [
    (b"abc\rdef", True),
    (b"req\x00nul", True),
    (b"req\r\nx-forged: 1", False),  # two header lines as far as HTTP goes: "req" is sane
    (b"a" * 10_000, False),
    ("réq-✓-ünï".encode(), False),
    (b"caf\xe9", False),
    (b"with space", False),
    (b"tab\tbed", False),
    (b"%0d%0aforged", False),
    (b"<script>", False),
]


@pytest.mark.parametrize(
    ("sent", "refused"), HOSTILE_IDS, ids=[repr(v[:20]) for v, _ in HOSTILE_IDS]
)
def test_hostile_request_ids_never_reach_a_log_line_or_record(
    *,
    start_guard: Callable[..., Guard],
    emulator: str,
    http: httpx.Client,
    lines: Lines,
    sent: bytes,
    refused: bool,
) -> None:
    guard = start_guard({"openai": emulator})
    body = chat(ORPHAN)
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nx-request-id: " + sent + b"\r\n"
        b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
        % len(body)
    ) + body
    answer = raw_exchange(guard, request)
    status = answer.split(b" ")[1]
    if refused:  # by uvicorn's parser: nothing reached the proxy
        assert (status, guard.app.state.writer.health.written) == (b"400", 0)
        return
    assert status == b"200", answer[:300]
    echoed = re.search(rb"x-request-id: (.*)\r\n", answer)
    assert echoed is not None
    assert SANE_ID.fullmatch(echoed[1].decode("latin-1"))
    record_id = re.search(rb"x-toolcall-guard-record: (.*)\r\n", answer)
    assert record_id is not None
    writer = guard.app.state.writer
    eventually(lambda: writer.health.written == 1, what="the record written")
    record = http.get(f"{guard.url}/repairs/{record_id[1].decode()}").json()
    assert SANE_ID.fullmatch(record["request_id"])
    [line] = [r for r in lines.records if getattr(r, "event", None)]
    assert line.event["request_id"] == record["request_id"]  # type: ignore[attr-defined]
    for text in (JsonFormatter().format(line), TextFormatter().format(line)):
        assert "\r" not in text
        assert "\n" not in text


def test_a_hostile_path_cannot_forge_a_text_log_line(
    start_guard: Callable[..., Guard], emulator: str, lines: Lines
) -> None:
    guard = start_guard({"openai": emulator})
    forged = b"/v1/models%0d%0a12:00:00.000%20INFO%20POST%20/v1/chat/completions%20200"
    answer = raw_exchange(guard, b"GET " + forged + b" HTTP/1.1\r\nhost: localhost\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 ")
    eventually(lambda: any(getattr(r, "event", None) for r in lines.records), what="a log line")
    [line] = [r for r in lines.records if getattr(r, "event", None)]
    assert "\r\n" in line.event["path"]  # type: ignore[attr-defined]  # the decoded path...
    text = TextFormatter().format(line)
    assert "\r" not in text  # ...is escaped in the text line
    assert "\n" not in text
    assert "\\x0d\\x0a12:00:00.000 INFO" in text
