"""bench/tracing.py: the targets table's tracing rows say PASS only within the goal, and the
OTLP sink answers every export 200 and counts it (what proves spans went out in a run)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from bench.report import Figures
from bench.tracing import GOAL_SCENARIOS, Sink, goal_rows


def _rows(guard: float, traced: float) -> list[dict[str, Any]]:
    return [
        {"round": 0, "scenario": name, "target": target, "cpu_us": cpu}
        for name in GOAL_SCENARIOS
        for target, cpu in (("guard", guard), ("otel", traced))
    ]


def test_the_rows_pass_within_ten_percent_only() -> None:
    within = goal_rows(Figures(_rows(100.0, 109.0)), 0)
    over = goal_rows(Figures(_rows(100.0, 111.0)), 3)

    assert [r[-1] for r in within] == ["PASS", "PASS", "PASS"]
    assert [r[-1] for r in over] == ["FAIL", "FAIL", "FAIL"]  # the last: 3 SDK modules loaded
    assert over[0][1] == "111 ÷ 100 = 1.11"


def _call(app: Sink, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": []}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], sent[1]["body"]


def test_the_sink_accepts_exports_and_counts_them() -> None:
    sink = Sink()

    assert _call(sink, "POST", "/v1/traces", b"\x0a\x00") == (200, b"")
    assert _call(sink, "POST", "/v1/metrics", b"\x0a") == (200, b"")
    status, body = _call(sink, "GET", "/count")

    assert status == 200
    assert orjson.loads(body) == {"posts": {"/v1/traces": 1, "/v1/metrics": 1}, "bytes": 3}
