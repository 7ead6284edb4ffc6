"""What a client meets at once, over real sockets (issue 16 items 3 and 8): the record id of an
answer is readable before the record is written; errors outside /v1 come in the OpenAI shape;
`/` leads to the viewer; an unknown rule filter is a 400 naming the rules."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from proxy.app import create_app
from proxy.core.registry import ALL_RULES
from proxy.emulator import create_emulator_app
from proxy.repairlog import MemoryRepairLog, RecordWriter
from proxy.settings import RepairLogSettings, load_settings
from tests.repairlog.records import make_record
from tests.servers import running

LOST_TOOL_CALLS = {
    "model": "deepseek-chat",
    "messages": [
        {"role": "user", "content": "Read config.py"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "tool_call_id": "call_1", "content": "port = 8080"},
        {"role": "user", "content": "Which port?"},
    ],
}
#: Longer than any test: records stay in the writer's queue unless the test says otherwise.
NEVER = 60.0


@pytest.fixture(scope="module")
def deepseek() -> Iterator[str]:
    with running(create_emulator_app("deepseek")) as url:
        yield url + "/v1"


def _proxy(deepseek: str, **repair_log: Any) -> FastAPI:
    settings = load_settings(
        upstreams={"deepseek": {"base_url": deepseek, "models": ["deepseek-*"]}},
        routing={"default": "deepseek"},
        repair_log={"url": "memory://", "flush_interval": NEVER, **repair_log},
    )
    return create_app(settings, repair_log=MemoryRepairLog())


@pytest.mark.parametrize("stream", [False, True])
def test_the_record_id_answers_before_the_record_is_written(deepseek: str, stream: bool) -> None:
    app = _proxy(deepseek)
    with running(app) as url, httpx.Client(timeout=10) as http:
        answer = http.post(url + "/v1/chat/completions", json={**LOST_TOOL_CALLS, "stream": stream})
        assert answer.status_code == 200
        record_id = answer.headers["x-toolcall-guard-record"]
        record = http.get(f"{url}/repairs/{record_id}")
        assert record.status_code == 200, record.text
        assert app.state.writer.health.written == 0, "served from the queue, not from the log"
        body = record.json()
        assert body["id"] == record_id
        assert body["outcome"] == "repaired"
        assert {f["rule"] for f in body["findings"]} >= {"orphan_tool_result"}
        assert body["received"] == {**LOST_TOOL_CALLS, "stream": stream}
        assert body["diff"]["messages"]


def test_the_record_id_answers_while_its_stream_is_still_open(deepseek: str) -> None:
    app = _proxy(deepseek)
    slow = {"x-emulator-pacing-ms": "300", "x-emulator-chunks": "5"}
    body = {**LOST_TOOL_CALLS, "stream": True}
    with running(app) as url, httpx.Client(timeout=10) as http:
        with http.stream("POST", url + "/v1/chat/completions", json=body, headers=slow) as answer:
            record_id = answer.headers["x-toolcall-guard-record"]
            record = http.get(f"{url}/repairs/{record_id}")
            answer.read()
        assert record.status_code == 200, record.text
        assert record.json()["outcome"] == "repaired"


def test_a_record_served_from_the_queue_keeps_the_capture_mode(deepseek: str) -> None:
    app = _proxy(deepseek, capture="redacted")
    with running(app) as url, httpx.Client(timeout=10) as http:
        answer = http.post(url + "/v1/chat/completions", json=LOST_TOOL_CALLS)
        record = http.get(f"{url}/repairs/{answer.headers['x-toolcall-guard-record']}").json()
    assert b"port = 8080" not in orjson.dumps(record["received"])
    assert record["received"]["messages"][2]["content"]["length"] == len("port = 8080")


def test_the_writer_serves_announced_queued_and_then_written_records() -> None:
    async def scenario() -> None:
        log = MemoryRepairLog()
        await log.open()
        writer = RecordWriter(log, RepairLogSettings(flush_interval=NEVER, batch_size=1))
        record = make_record(1)
        assert writer.find(record.id) is None
        writer.announce(record.id, lambda: record)  # the id went out in the answer's headers
        record.upstream_status = 200  # the answer goes on; what is served follows it
        assert writer.find(record.id)["upstream_status"] == 200  # type: ignore[index]
        other = make_record(2)
        writer.announce(other.id, lambda: other)
        writer.withdraw(other.id)  # it will not be recorded after all
        assert writer.find(other.id) is None
        writer.submit(record)
        assert writer.find(record.id) is not None
        writer.start()  # batch_size 1: written at once
        async with asyncio.timeout(5):
            # The writer offers no event for "written": its counter, polled within a bound.
            while writer.health.written == 0:  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        assert writer.find(record.id) is None
        assert await log.get(record.id) is not None
        await writer.stop()

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def proxy_url(deepseek: str) -> Iterator[str]:
    with running(_proxy(deepseek)) as url:
        yield url


def test_an_unknown_rule_filter_is_a_400_naming_the_rules(proxy_url: str) -> None:
    response = httpx.get(proxy_url + "/repairs", params={"rule": "typo"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "rule"
    assert error["code"] == "invalid_parameter"
    assert "'typo'" in error["message"]
    assert all(name in error["message"] for name in ALL_RULES)
    assert httpx.get(proxy_url + "/repairs", params={"rule": "orphan_tool_result"}).is_success


def test_an_unknown_path_is_a_404_in_the_openai_shape(proxy_url: str) -> None:
    response = httpx.get(proxy_url + "/nope")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == "not_found"
    assert "GET /nope" in error["message"]
    assert "/v1/" in error["message"]


def test_a_wrong_method_is_a_405_in_the_openai_shape(proxy_url: str) -> None:
    response = httpx.post(proxy_url + "/healthz")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    error = response.json()["error"]
    assert error["code"] == "method_not_allowed"
    assert "allowed methods: GET" in error["message"]


def test_the_root_leads_to_the_viewer(proxy_url: str) -> None:
    response = httpx.get(proxy_url + "/")
    assert response.status_code == 307
    assert response.headers["location"] == "/ui"
    assert httpx.get(proxy_url + "/", follow_redirects=True).status_code == 200
