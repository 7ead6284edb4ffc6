"""How each answer ended, told truthfully (issue 26): the record, the log line and the metrics
say ``complete``, ``upstream_cut``, ``upstream_timeout`` or ``client_gone``, never a clean end
the client did not get. Each request is a repaired one (an orphan tool result), so it has a
record, named in ``x-toolcall-guard-record`` as its answer starts."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import orjson
import pytest
from prometheus_client import REGISTRY

from proxy.logs import UVICORN_INCOMPLETE, IncompleteOnPurpose
from tests.e2e.test_serve import Served
from tests.hardening.conftest import (
    ORPHAN,
    SSE_HEAD,
    Conn,
    Guard,
    RawUpstream,
    chat,
    chunk,
    eventually,
)

READ_TIMEOUT = 0.4
EVENTS = b'data: {"n": 1}\n\ndata: {"n": 2}\n\n'
WHOLE = b'{"id": "chatcmpl-1", "choices": []}'


def sized_head(length: int) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % (
        length
    )


async def whole_json(conn: Conn) -> None:
    await conn.send(sized_head(len(WHOLE)) + WHOLE)


async def whole_sse(conn: Conn) -> None:
    await conn.send(SSE_HEAD + chunk(EVENTS) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")


async def cut_sse(conn: Conn) -> None:
    await conn.send(SSE_HEAD + chunk(EVENTS), pause=0.05)
    conn.reset()


async def stalled_sse(conn: Conn) -> None:
    await conn.send(SSE_HEAD + chunk(EVENTS))
    await asyncio.sleep(READ_TIMEOUT * 4)  # past the read timeout: the proxy gives up first


async def cut_json(conn: Conn) -> None:
    await conn.send(sized_head(len(WHOLE)) + WHOLE[:10], pause=0.05)
    conn.reset()


async def stalled_json(conn: Conn) -> None:
    await conn.send(sized_head(len(WHOLE)) + WHOLE[:10])
    await asyncio.sleep(READ_TIMEOUT * 4)


async def streams_on(conn: Conn) -> None:
    await conn.send(SSE_HEAD)
    for n in range(200):  # ~4 s: the client leaves long before the end
        await conn.send(chunk(b'data: {"n": %d}\n\n' % n), pause=0.02)
    await conn.send(b"0\r\n\r\n")


FAULTS: dict[str, Callable[[Conn], Awaitable[None]]] = {
    f.__name__: f
    for f in (whole_json, whole_sse, cut_sse, stalled_sse, cut_json, stalled_json, streams_on)
}


async def dispatch(conn: Conn) -> None:
    request = await conn.request()
    await FAULTS[request.headers["x-fault"]](conn)


@pytest.fixture
def stand(start_guard: Callable[..., Guard], raw_upstream: Callable[..., RawUpstream]) -> Guard:
    upstream = raw_upstream(dispatch)
    guard = start_guard({"openai": upstream.url}, upstream_overrides={"read_timeout": READ_TIMEOUT})
    guard.mark_baseline()
    return guard


def endings(ending: str) -> float:
    labels = {"upstream": "openai", "ending": ending}
    return REGISTRY.get_sample_value("toolcall_guard_answer_endings_total", labels) or 0.0


def record_of(http: httpx.Client, guard: Guard, record_id: str) -> dict[str, object]:
    got = http.get(f"{guard.url}/repairs/{record_id}")
    assert got.status_code == 200, got.text
    record: dict[str, object] = got.json()
    return record


def ask(http: httpx.Client, guard: Guard, fault: str, *, stream: bool) -> tuple[str, bytes | None]:
    """The record id handed out, and the whole body (None when the body was cut)."""
    body = chat(ORPHAN, stream=stream)
    headers = {"x-fault": fault, "content-type": "application/json"}
    with http.stream("POST", guard.v1 + "/chat/completions", content=body, headers=headers) as r:
        assert r.status_code == 200
        record_id = r.headers["x-toolcall-guard-record"]
        try:
            return record_id, r.read()
        except httpx.RemoteProtocolError:  # a sized body cut short: the connection was cut
            return record_id, None


@pytest.mark.parametrize(
    ("fault", "stream", "ending"),
    [
        ("whole_json", False, "complete"),
        ("whole_sse", True, "complete"),
        ("cut_sse", True, "upstream_cut"),
        ("stalled_sse", True, "upstream_timeout"),
        ("cut_json", False, "upstream_cut"),
        ("stalled_json", False, "upstream_timeout"),
    ],
)
def test_the_record_says_how_the_answer_ended(
    *,
    http: httpx.Client,
    stand: Guard,
    caplog: pytest.LogCaptureFixture,
    fault: str,
    stream: bool,
    ending: str,
) -> None:
    before = endings(ending)
    with caplog.at_level(logging.INFO, logger="toolcall_guard"):
        record_id, body = ask(http, stand, fault, stream=stream)
        eventually(lambda: _line(caplog, record_id) is not None, what="the request's log line")
    if ending == "complete":
        assert body is not None
        assert b"error" not in body
    elif stream:  # the client saw the stream end with an error event saying why
        assert body is not None
        error = orjson.loads(body.rsplit(b"data: ", 1)[1])["error"]
        expected = "upstream_timeout" if ending == "upstream_timeout" else "upstream_unavailable"
        assert error["code"] == expected
    else:
        assert body is None
    record = record_of(http, stand, record_id)
    assert (record["status"], record["ending"], record["proxy_error"]) == (200, ending, None)
    stand.settled()  # the request's task is over: whatever uvicorn had to say, it said
    [ours] = [r for r in caplog.records if getattr(r, "event", {}).get("record") == record_id]
    assert ours.event["end"] == ending  # type: ignore[attr-defined]
    assert ours.event["request_id"]  # type: ignore[attr-defined]
    # One line per cut answer, the proxy's own, at warning; none of uvicorn's (issue 26.2).
    assert ours.levelno == (logging.INFO if ending == "complete" else logging.WARNING)
    assert [r for r in caplog.records if r.getMessage() == UVICORN_INCOMPLETE] == []
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert endings(ending) == before + 1


def test_a_client_gone_mid_stream_is_recorded_as_gone_not_as_a_plain_200(
    http: httpx.Client, stand: Guard, caplog: pytest.LogCaptureFixture
) -> None:
    before = endings("client_gone")
    body = chat(ORPHAN, stream=True)
    headers = {"x-fault": "streams_on", "content-type": "application/json"}
    url = stand.v1 + "/chat/completions"
    with caplog.at_level(logging.INFO, logger="toolcall_guard"):
        with http.stream("POST", url, content=body, headers=headers) as r:
            record_id = r.headers["x-toolcall-guard-record"]
            for piece in r.iter_raw():
                if b'"n": 2' in piece:
                    break  # leaving: closing the response drops the connection mid-stream
        eventually(lambda: _line(caplog, record_id) is not None, what="the request's log line")
    record = record_of(http, stand, record_id)
    assert (record["status"], record["ending"]) == (200, "client_gone")
    line = _line(caplog, record_id)
    assert line is not None
    assert line["end"] == "client_gone"
    assert endings("client_gone") == before + 1


def test_a_record_read_while_its_answer_streams_claims_no_ending(
    http: httpx.Client, stand: Guard
) -> None:
    body = chat(ORPHAN, stream=True)
    headers = {"x-fault": "streams_on", "content-type": "application/json"}
    with http.stream("POST", stand.v1 + "/chat/completions", content=body, headers=headers) as r:
        record_id = r.headers["x-toolcall-guard-record"]
        record = record_of(http, stand, record_id)
        assert (record["status"], record["ending"]) == (200, None)


def _line(caplog: pytest.LogCaptureFixture, record_id: str) -> dict[str, object] | None:
    for r in caplog.records:
        event = getattr(r, "event", None)
        if r.name == "toolcall_guard" and event and event.get("record") == record_id:
            return dict(event)
    return None


def test_uvicorns_line_goes_out_for_a_response_not_left_incomplete_on_purpose() -> None:
    """Only the proxy's own cut answers are quieted: the same line for anything else (a bug
    somewhere) still reaches the log."""
    line = logging.LogRecord("uvicorn.error", logging.ERROR, "", 0, UVICORN_INCOMPLETE, (), None)
    other = logging.LogRecord("uvicorn.error", logging.ERROR, "", 0, "something else", (), None)
    assert IncompleteOnPurpose().filter(line)
    assert IncompleteOnPurpose().filter(other)


def test_under_serve_a_cut_json_answer_is_one_warning_line_with_its_request_id(
    tmp_path: Path, raw_upstream: Callable[..., RawUpstream]
) -> None:
    """The production server (``serve``: uvloop, the guarded httptools protocol, the proxy's
    log handler): the cut is said once, by the proxy; uvicorn's ERROR line does not appear."""
    upstream = raw_upstream(dispatch)
    config = tmp_path / "guard.toml"
    config.write_text(
        f'[server]\nlog_format = "json"\n[repair_log]\nurl = "memory://"\n'
        f'[upstreams.openai]\nbase_url = "{upstream.url}"\nmodels = ["gpt-*"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLCALL_GUARD_", "PROM"))}
    served = Served(["--config", str(config)], env)
    try:
        served.wait_healthy()
        headers = {"x-fault": "cut_json", "x-request-id": "cut-1"}
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(served.url + "/v1/chat/completions", content=chat(ORPHAN), headers=headers)
    finally:
        stderr = served.stop()
    assert UVICORN_INCOMPLETE not in stderr
    lines = [orjson.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    [line] = [line for line in lines if line.get("request_id") == "cut-1"]
    assert (line["level"], line["end"], line["status"]) == ("warning", "upstream_cut", 200)
    assert [x for x in lines if x["level"] in ("error", "critical")] == []
