"""What the proxy hands the repair log: repaired, rejected, warned, upstream-rejected requests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson

from tests.e2e.conftest import Proxy, Upstream

USER = {"role": "user", "content": "Read a.txt"}
ORPHAN = [USER, {"role": "tool", "tool_call_id": "call_1", "content": "hello"}]


def stored(proxy: Proxy, record_id: str) -> dict[str, Any]:
    """The record from ``GET /repairs/{id}``, once the writer flushed it (bounded wait)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        response = httpx.get(f"{proxy.url}/repairs/{record_id}")
        if response.status_code == 200:
            record: dict[str, Any] = response.json()
            return record
        assert response.status_code == 404, response.text
        time.sleep(0.02)
    raise AssertionError(f"record {record_id} was never written")


def chat(http: httpx.Client, proxy: Proxy, body: Any, **headers: str) -> httpx.Response:
    return http.post(proxy.v1 + "/chat/completions", content=orjson.dumps(body), headers=headers)


def test_a_repaired_request_is_recorded_with_both_payloads(
    http: httpx.Client, proxy: Proxy, upstreams: dict[str, Upstream]
) -> None:
    body = {"model": "gpt-4o", "messages": ORPHAN, "stream": True}
    response = chat(
        http, proxy, body, authorization="Bearer sk-RECORD-ME-NOT", **{"x-request-id": "r-1"}
    )
    record = stored(proxy, response.headers["x-toolcall-guard-record"])

    assert record["outcome"] == "repaired"
    assert record["upstream"] == "openai"
    assert record["model"] == "gpt-4o"
    assert record["path"] == "/v1/chat/completions"
    assert record["stream"] is True
    assert record["request_id"] == "r-1"
    assert record["upstream_status"] == 200
    assert record["received"] == body
    assert record["forwarded"] == orjson.loads(upstreams["openai"].chats()[0].body)
    assert [f["rule"] for f in record["findings"]] == ["orphan_tool_result"]
    assert record["findings"][0]["path"] == "messages[1]" or record["findings"][0][
        "path"
    ].startswith("messages[1]")
    assert record["duration_ms"] >= record["upstream_ms"] >= 0
    assert record["sanitize_ms"] >= 0
    assert "sk-RECORD-ME-NOT" not in orjson.dumps(record).decode()


def test_a_rejected_request_is_recorded_without_a_forwarded_body(
    http: httpx.Client, proxy: Proxy
) -> None:
    body = {"model": "gpt-4o", "messages": [USER, {"role": "robot", "content": "x"}]}
    response = chat(http, proxy, body)
    record = stored(proxy, response.headers["x-toolcall-guard-record"])
    assert record["outcome"] == "rejected"
    assert record["upstream"] == "openai", "the upstream it was routed to (issue 22 item 5)"
    assert record["forwarded"] is None
    assert record["upstream_status"] is None
    assert record["findings"][0]["rule"] == "unknown_role"


def test_an_upstream_rejection_of_a_clean_request_is_recorded_and_classified(
    http: httpx.Client, proxy: Proxy
) -> None:
    body = {"model": "gpt-4o", "messages": [USER]}
    response = chat(http, proxy, body, **{"x-emulator-status": "429"})
    assert response.status_code == 429
    assert response.headers["x-toolcall-guard-outcome"] == "clean"
    record = stored(proxy, response.headers["x-toolcall-guard-record"])
    assert record["outcome"] == "upstream_rejected"
    assert record["upstream_status"] == 429
    assert record["upstream_error"] == response.text
    assert record["upstream_error_kind"] == "rate_limit"
    assert record["findings"] == []
    assert record["forwarded"] == body


def test_what_the_policy_only_warned_about_and_the_upstream_refused(
    http: httpx.Client, start_proxy: Callable[..., Proxy], upstreams: dict[str, Upstream]
) -> None:
    proxy = start_proxy(
        {"deepseek": upstreams["deepseek"].url},
        routing={"default": "deepseek"},
        upstream_overrides={"policy": "observe"},
        repair_log={"max_error_body_bytes": 256},
    )
    body = {"model": "deepseek-chat", "messages": ORPHAN, "stream": True}
    response = chat(http, proxy, body)
    assert response.status_code == 400
    assert response.headers["x-toolcall-guard-outcome"] == "warned"
    assert upstreams["deepseek"].chats()[0].body == orjson.dumps(body)  # forwarded unchanged
    record = stored(proxy, response.headers["x-toolcall-guard-record"])
    assert record["outcome"] == "upstream_rejected"
    assert record["upstream_error_kind"] == "orphan_tool_result"
    assert record["findings"][0]["action"] == "warn"
    assert record["upstream_error"] == response.text[:256]


def test_a_warned_request_the_upstream_accepts(
    http: httpx.Client, start_proxy: Callable[..., Proxy], upstreams: dict[str, Upstream]
) -> None:
    proxy = start_proxy(
        {"openai": upstreams["openai"].url},
        upstream_overrides={"policy": "lenient"},
        policies={"lenient": {"base": "openai", "rules": {"consecutive_same_role": "warn"}}},
    )
    body = {"model": "gpt-4o", "messages": [USER, USER]}
    response = chat(http, proxy, body)
    assert response.status_code == 200
    assert response.headers["x-toolcall-guard-outcome"] == "warned"
    assert response.headers["x-toolcall-guard-rules"] == "consecutive_same_role=1"
    record = stored(proxy, response.headers["x-toolcall-guard-record"])
    assert record["outcome"] == "warned"
    assert record["forwarded"] == body


def test_clean_requests_are_not_recorded(http: httpx.Client, proxy: Proxy) -> None:
    response = chat(http, proxy, {"model": "gpt-4o", "messages": [USER]})
    assert response.status_code == 200
    assert "x-toolcall-guard-record" not in response.headers


def test_a_sqlite_log_gets_its_directory_and_keeps_records(
    http: httpx.Client,
    start_proxy: Callable[..., Proxy],
    upstreams: dict[str, Upstream],
    tmp_path: Path,
) -> None:
    database = tmp_path / "not" / "yet" / "repairs.sqlite3"
    proxy = start_proxy(
        {"openai": upstreams["openai"].url}, repair_log={"url": f"sqlite:///{database}"}
    )
    assert database.parent.is_dir()
    response = chat(http, proxy, {"model": "gpt-4o", "messages": ORPHAN})
    assert stored(proxy, response.headers["x-toolcall-guard-record"])["outcome"] == "repaired"
    assert database.is_file()
