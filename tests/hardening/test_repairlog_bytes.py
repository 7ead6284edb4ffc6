"""The repair-log queue counts what it holds (issue 24 item 5), over real sockets.

A record holds the *parsed* request (and each body sent upstream), not the bytes on the wire:
a gzip'd body of 4 KB can hold 1 MiB. With the database down, ``repair_log.queue_bytes``
bounds the decompressed size of what waits, so compressed requests cannot fill the memory.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable

import httpx
import orjson

from tests.hardening.conftest import Guard

#: A repair log that cannot be written: records wait in the queue.
DOWN = "sqlite:////proc/toolcall-guard-tests/repairs.sqlite3"
QUEUE_BYTES = 1024 * 1024
REQUESTS = 8


def rejected_body(n: int) -> bytes:
    """A history every policy rejects (an item that is no message), 512 KiB when parsed."""
    text = f"{n} " + "a" * (512 * 1024)
    return orjson.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": text}, 5]})


def test_gzipd_requests_count_their_decompressed_size_in_the_queue(
    start_guard: Callable[..., Guard], emulator: str, http: httpx.Client
) -> None:
    bound = {"url": DOWN, "flush_interval": 0.05, "queue_size": 1000, "queue_bytes": QUEUE_BYTES}
    guard = start_guard({"openai": emulator}, repair_log_settings=bound)
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    for n in range(REQUESTS):
        wire = gzip.compress(rejected_body(n))
        assert len(wire) < 4096
        answer = http.post(guard.url + "/v1/chat/completions", content=wire, headers=headers)
        assert answer.status_code == 400, answer.text
        assert "x-toolcall-guard-record" in answer.headers
    writer = guard.app.state.writer
    held = len(rejected_body(0))
    assert 1 <= writer.pending <= QUEUE_BYTES // held  # 2 at most, not all 8
    assert writer.pending + writer.health.dropped == REQUESTS
