"""/healthz, /readyz, /metrics and the one log line per request."""

from __future__ import annotations

import asyncio
import io
import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest

from proxy.api.endpoint import ProxyEndpoint
from proxy.app import Front, create_app
from proxy.logs import JsonFormatter, RequestLog, TextFormatter, configure_logging
from proxy.repairlog import MemoryRepairLog
from proxy.settings import ServerSettings
from tests.e2e.conftest import Proxy, Upstream, proxy_settings
from tests.servers import running

ORPHAN = [
    {"role": "user", "content": "SECRET-CONTENT"},
    {"role": "tool", "tool_call_id": "call_1", "content": "x"},
]


def test_healthz(http: httpx.Client, proxy: Proxy) -> None:
    response = http.get(proxy.url + "/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_follows_the_repair_log(http: httpx.Client, upstreams: dict[str, Upstream]) -> None:
    log = MemoryRepairLog()
    app = create_app(proxy_settings({"openai": upstreams["openai"].url}), repair_log=log)
    with running(app) as url:
        assert http.get(url + "/readyz").json() == {"status": "ready"}
        asyncio.run(log.close())  # the backend goes away under the running proxy
        response = http.get(url + "/readyz")
        assert response.status_code == 503
        assert response.json()["status"] == "unavailable"
        assert "repair log" in response.json()["reason"]


def _sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_metrics_count_requests_outcomes_and_findings(http: httpx.Client, proxy: Proxy) -> None:
    before = http.get(proxy.url + "/metrics").text
    body = orjson.dumps({"model": "gpt-4o", "messages": ORPHAN})
    assert http.post(proxy.v1 + "/chat/completions", content=body).status_code == 200
    response = http.get(proxy.url + "/metrics")
    after = response.text

    assert response.headers["content-type"].startswith("text/plain")
    for name, labels in [
        ("toolcall_guard_requests_total", {"upstream": "openai", "route": "chat", "status": "200"}),
        (
            "toolcall_guard_outcomes_total",
            {"upstream": "openai", "api": "chat", "outcome": "repaired"},
        ),
        (
            "toolcall_guard_findings_total",
            {"upstream": "openai", "rule": "orphan_tool_result", "action": "salvage"},
        ),
    ]:
        assert _sample(after, name, **labels) == _sample(before, name, **labels) + 1, name
    count = "toolcall_guard_sanitize_seconds_count"
    assert re.search(rf"^{count} (\d+)", after, re.M)


def _logged(caplog: pytest.LogCaptureFixture, request_id: str) -> list[logging.LogRecord]:
    """The request's log records, once the server thread wrote them (after the response)."""
    deadline = time.monotonic() + 5
    while True:
        found = [
            r
            for r in caplog.records
            if r.name == "toolcall_guard"
            and getattr(r, "event", {}).get("request_id") == request_id
        ]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.01)


@pytest.mark.parametrize("log_contents", [False, True])
def test_one_log_line_per_request_without_keys(
    http: httpx.Client,
    start_proxy: Callable[..., Proxy],
    upstreams: dict[str, Upstream],
    caplog: pytest.LogCaptureFixture,
    log_contents: bool,
) -> None:
    proxy = start_proxy({"openai": upstreams["openai"].url}, server={"log_contents": log_contents})
    body = orjson.dumps({"model": "gpt-4o", "messages": ORPHAN})
    headers = {"authorization": "Bearer sk-SECRET-KEY", "x-request-id": "req-77"}
    with caplog.at_level(logging.INFO, logger="toolcall_guard"):
        http.post(proxy.v1 + "/chat/completions", content=body, headers=headers)
        [record] = _logged(caplog, "req-77")

    line = orjson.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-77"
    assert line["method"] == "POST"
    assert line["path"] == "/v1/chat/completions"
    assert line["route"] == "chat"
    assert line["upstream"] == "openai"
    assert line["model"] == "gpt-4o"
    assert line["outcome"] == "repaired"
    assert line["rules"] == "orphan_tool_result=1"
    assert line["status"] == 200
    assert line["end"] == "complete"
    assert {"total_ms", "sanitize_ms", "upstream_ms", "record"} <= set(line)
    text = TextFormatter().format(record)
    assert "outcome=repaired" in text
    for rendered in (JsonFormatter().format(record), text):
        assert "sk-SECRET-KEY" not in rendered
        assert ("SECRET-CONTENT" in rendered) is log_contents


async def _broken(scope: Any, receive: Any, send: Any) -> None:
    raise RuntimeError("boom: internal detail")


def test_the_one_handler_answers_the_unexpected_in_the_openai_shape(
    http: httpx.Client, upstreams: dict[str, Upstream], caplog: pytest.LogCaptureFixture
) -> None:
    # The real front door around an app that fails, and a proxy endpoint never bound to a relay.
    endpoint = ProxyEndpoint(proxy_settings({"openai": upstreams["openai"].url}))
    with (
        caplog.at_level(logging.ERROR, logger="toolcall_guard"),
        running(Front(_broken, proxy=endpoint), lifespan="off") as url,
    ):
        for response in (http.get(url + "/healthz"), http.get(url + "/v1/models")):
            assert response.status_code == 502
            error = response.json()["error"]
            assert error["code"] == "proxy_internal_error"
            assert error["type"] == "server_error"
            assert "boom" not in response.text
            assert "Traceback" not in response.text
    failures = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert len(failures) == 2
    assert "boom: internal detail" in JsonFormatter().format(failures[0])


def test_an_unexpected_error_in_a_fastapi_route_gets_the_same_answer(
    http: httpx.Client, upstreams: dict[str, Upstream], caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(proxy_settings({"openai": upstreams["openai"].url}))

    async def boom() -> None:
        raise RuntimeError("route detail")

    app.add_api_route("/boom", boom)
    with caplog.at_level(logging.ERROR, logger="toolcall_guard"), running(app) as url:
        response = http.get(url + "/boom")
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "proxy_internal_error"
    assert "route detail" not in response.text
    assert any("route detail" in JsonFormatter().format(r) for r in caplog.records if r.exc_info)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def restored_loggers() -> Iterator[None]:
    saved = {
        name: (
            logging.getLogger(name).handlers[:],
            logging.getLogger(name).level,
            logging.getLogger(name).propagate,
        )
        for name in ("toolcall_guard", "uvicorn")
    }
    yield
    for name, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(name)
        logger.handlers[:], logger.level, logger.propagate = handlers, level, propagate


@pytest.mark.usefixtures("restored_loggers")
@pytest.mark.parametrize(
    ("log_format", "terminal", "json_lines"),
    [("auto", True, False), ("auto", False, True), ("json", True, True), ("text", False, False)],
)
def test_log_format(log_format: str, terminal: bool, json_lines: bool) -> None:
    stream = _Terminal() if terminal else io.StringIO()
    configure_logging(ServerSettings(log_format=log_format), stream)
    entry = RequestLog("POST", "/v1/chat/completions", "rid-1", time.perf_counter())
    entry.status, entry.outcome = 200, "clean"
    entry.emit()
    line = stream.getvalue().strip()
    if json_lines:
        assert orjson.loads(line)["request_id"] == "rid-1"
    else:
        assert "POST /v1/chat/completions 200" in line
        assert "request_id=rid-1" in line
        assert "outcome=clean" in line
