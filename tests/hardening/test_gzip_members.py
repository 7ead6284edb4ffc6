"""A multi-member gzip body is checked whole (issue 24 item 7), over real sockets.

An upstream decodes every gzip member of a body; the proxy once checked only the first and
forwarded all of them. Now what it checks is what the upstream decodes: the members together.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable

import httpx
import orjson

from proxy.relay.http import MAX_MEMBERS
from tests.hardening.conftest import CLEAN, ORPHAN, Guard

HEADERS = {"content-type": "application/json", "content-encoding": "gzip"}


def post(http: httpx.Client, guard: Guard, wire: bytes) -> httpx.Response:
    return http.post(guard.url + "/v1/chat/completions", content=wire, headers=HEADERS)


def test_a_body_split_across_members_is_checked_whole(
    start_guard: Callable[..., Guard], http: httpx.Client, emulator: str
) -> None:
    guard = start_guard({"openai": emulator})
    body = orjson.dumps({"model": "gpt-4o", "messages": ORPHAN})
    half = len(body) // 2
    answer = post(http, guard, gzip.compress(body[:half]) + gzip.compress(body[half:]))
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-toolcall-guard-outcome"] == "repaired"


def test_a_second_member_is_never_forwarded_unread(
    start_guard: Callable[..., Guard], http: httpx.Client, emulator: str
) -> None:
    guard = start_guard({"openai": emulator})
    first = gzip.compress(orjson.dumps({"model": "gpt-4o", "messages": CLEAN}))
    hidden = gzip.compress(orjson.dumps({"model": "gpt-4o", "messages": ORPHAN}))
    answer = post(http, guard, first + hidden)
    assert answer.status_code == 400, answer.text  # two JSON documents: not a request
    assert answer.json()["error"]["type"] == "invalid_request_error"
    assert "x-toolcall-guard-outcome" not in answer.headers  # never forwarded
    truncated = post(http, guard, first + hidden[:-8])  # the second member's trailer cut off
    assert truncated.status_code == 400


def test_members_are_bounded(
    start_guard: Callable[..., Guard], http: httpx.Client, emulator: str
) -> None:
    guard = start_guard({"openai": emulator})
    body = orjson.dumps({"model": "gpt-4o", "messages": CLEAN})
    many = gzip.compress(body) + gzip.compress(b" ") * MAX_MEMBERS
    answer = post(http, guard, many)
    assert answer.status_code == 400
    assert "gzip members" in answer.json()["error"]["message"]
    padded = gzip.compress(body) + gzip.compress(b" ") * (MAX_MEMBERS - 1)
    # checked and forwarded as sent (the emulator, like OpenAI, then refuses a gzip body)
    assert post(http, guard, padded).headers["x-toolcall-guard-outcome"] == "clean"
