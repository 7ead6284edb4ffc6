"""Every client-controlled string is bounded (issue 24 item 4), over real sockets.

A ``model`` longer than ``server.max_model_length`` is a 400 in the API's error shape (chat,
Responses, any other JSON body routed by its model) before it is routed, cached, logged or
recorded; the router's model cache holds only bounded keys; error messages quote at most a
short cut of an unknown upstream name; a log line holds at most a bounded cut of the path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import httpx
import orjson
import pytest

from proxy.logs import MAX_LOGGED_PATH
from proxy.routing import Router
from tests.hardening.conftest import CLEAN, Guard, Lines, eventually

HUGE = "m" * (1024 * 1024)  # 1 MiB: a unique one per request once cost the process +7 MiB


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"messages": CLEAN}),
        ("/v1/responses", {"input": "hi"}),
        ("/v1/embeddings", {"input": "hi"}),  # relayed untouched, routed by its model
    ],
    ids=["chat", "responses", "passthrough"],
)
def test_an_oversized_model_is_a_400_never_routed_cached_or_logged(
    *,
    start_guard: Callable[..., Guard],
    http: httpx.Client,
    emulator: str,
    lines: Lines,
    path: str,
    body: dict[str, str],
) -> None:
    guard = start_guard({"openai": emulator})
    router: Router = guard.app.state.proxy.router
    for n in range(3):
        model = f"{n}{HUGE}"
        answer = http.post(guard.url + path, content=orjson.dumps({"model": model, **body}))
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["param"] == "model"
        assert "server.max_model_length" in error["message"]
        assert len(answer.content) < 1024
    assert all(len(key) <= 256 for key in router._by_model)
    assert not any(HUGE[:300] in line for line in lines.rendered())

    at_limit = "x" * 256
    answer = http.post(guard.url + path, content=orjson.dumps({"model": at_limit, **body}))
    assert answer.status_code != 400 or answer.json()["error"].get("param") != "model"


def test_the_limit_is_configurable(
    start_guard: Callable[..., Guard], http: httpx.Client, emulator: str
) -> None:
    guard = start_guard({"openai": emulator}, server={"max_model_length": 8})
    url = guard.url + "/v1/chat/completions"
    assert http.post(url, json={"model": "gpt-4o", "messages": CLEAN}).status_code == 200
    refused = http.post(url, json={"model": "gpt-4o-mini", "messages": CLEAN})
    assert refused.status_code == 400
    assert "at most 8" in refused.json()["error"]["message"]


def test_unknown_upstream_names_are_quoted_short(
    start_guard: Callable[..., Guard], http: httpx.Client, emulator: str
) -> None:
    guard = start_guard({"openai": emulator})
    name = "u" * 8000
    by_header = http.post(
        guard.url + "/v1/chat/completions",
        json={"model": "gpt-4o", "messages": CLEAN},
        headers={"x-toolcall-guard-upstream": name},
    )
    assert by_header.status_code == 400
    by_prefix = http.post(guard.url + f"/{name}/v1/chat/completions", json={"model": "gpt-4o"})
    assert by_prefix.status_code == 404
    for answer in (by_header, by_prefix):
        assert answer.json()["error"]["code"] == "unknown_upstream"
        assert len(answer.content) < 1024


def test_a_log_line_holds_a_bounded_cut_of_the_path(
    start_guard: Callable[..., Guard], http: httpx.Client, emulator: str, lines: Lines
) -> None:
    guard = start_guard({"openai": emulator})
    long_path = "/v1/files/" + "p" * 6000
    http.get(guard.url + long_path)

    def request_lines() -> list[logging.LogRecord]:
        return [r for r in list(lines.records) if getattr(r, "event", None)]

    eventually(lambda: len(request_lines()) == 1, what="the request's line")  # after the answer
    logged = request_lines()[0].event["path"]  # type: ignore[attr-defined]
    assert len(logged) <= MAX_LOGGED_PATH + 1
    assert long_path.startswith(logged.removesuffix("…"))
