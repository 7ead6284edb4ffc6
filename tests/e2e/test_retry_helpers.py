"""Shared pieces of the repair-on-reject tests (``test_retry*.py``; no tests here).

Every strict emulator on loopback (the session's openai, deepseek and gemini from
``conftest.py``, the seven second-tier ones started here), a proxy in front of one of them with
the ``openai`` preset (a preset that does not know that provider, so its refusals get through
to the upstream), and readers for what a test checks afterwards: the record, ``/metrics``.
Issue 15, repair-on-reject.md C2.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import orjson
import pytest

from proxy.emulator import ReceivedRequest, create_emulator_app
from proxy.emulator.app import PREFIXES
from tests.e2e.conftest import Proxy, Upstream
from tests.servers import running

SECOND_TIER = ("kimi", "mistral", "groq", "xai", "qwen", "vllm", "ollama")
RETRIED = "x-toolcall-guard-retried"
RECORD = "x-toolcall-guard-record"
#: The custom policy a test's rule overrides go into (built on the openai preset).
CUSTOM = "custom"


@pytest.fixture(scope="module")
def second_tier() -> Iterator[dict[str, Upstream]]:
    """The seven second-tier emulators, at each one's first API prefix."""
    with ExitStack() as stack:
        started = {}
        for provider in SECOND_TIER:
            received: list[ReceivedRequest] = []
            url = stack.enter_context(running(create_emulator_app(provider, received=received)))
            started[provider] = Upstream(provider, url + PREFIXES[provider][0], received)
        yield started


@pytest.fixture
def emulated(
    upstreams: dict[str, Upstream], second_tier: dict[str, Upstream]
) -> dict[str, Upstream]:
    """All ten emulators, nothing received yet."""
    for upstream in second_tier.values():
        upstream.received.clear()
    return {**upstreams, **second_tier}


Guarded = Callable[..., Proxy]


@pytest.fixture
def guarded(start_proxy: Callable[..., Proxy], emulated: dict[str, Upstream]) -> Guarded:
    """``guarded(provider, rules=..., **settings)``: a proxy whose only upstream (named after
    the provider, the default route) is that emulator, under the ``openai`` preset, or under a
    policy built on it with ``rules`` overridden."""

    def start(provider: str, *, rules: dict[str, Any] | None = None, **overrides: Any) -> Proxy:
        policy = CUSTOM if rules else "openai"
        upstream = {"policy": policy, **overrides.pop("upstream_overrides", {})}
        policies = {CUSTOM: {"base": "openai", "rules": rules}} if rules else {}
        return start_proxy(
            {provider: emulated[provider].url},
            routing={"default": provider},
            upstream_overrides=upstream,
            policies=policies,
            **overrides,
        )

    return start


def posts(upstream: Upstream) -> list[Any]:
    """The bodies of the POSTs an emulator received, parsed, in order."""
    return [orjson.loads(r.body) for r in upstream.received if r.method == "POST"]


def stored(proxy: Proxy, record_id: str) -> dict[str, Any]:
    """The record from ``GET /repairs/{id}`` (bounded wait for the writer)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        response = proxy.http.get(f"{proxy.url}/repairs/{record_id}")
        if response.status_code == 200:
            record: dict[str, Any] = response.json()
            return record
        assert response.status_code == 404, response.text
        time.sleep(0.02)
    raise AssertionError(f"record {record_id} was never written")


def metric(proxy: Proxy, name: str, **labels: str) -> float:
    """One sample of ``/metrics`` (0 when absent). Counters are per process: compare deltas."""
    for line in proxy.http.get(proxy.url + "/metrics").text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def rules_of(record: dict[str, Any]) -> list[str]:
    return [finding["rule"] for finding in record["findings"]]


def assert_retried_once(
    proxy: Proxy, upstream: Upstream, response: httpx.Response, rule: str, refused: int
) -> tuple[dict[str, Any], list[Any]]:
    """The request ended 200 after exactly one retry made by ``rule``, the first attempt
    refused with ``refused``; the record holds both attempts as the emulator received them.
    Returns the record and the two bodies the emulator got."""
    assert response.status_code == 200, response.text
    assert response.headers[RETRIED] == rule
    # The answer's headers say what was finally sent: repaired, by the retry's rule too.
    assert response.headers["x-toolcall-guard-outcome"] == "repaired"
    assert f"{rule}=" in response.headers["x-toolcall-guard-rules"]
    sent = posts(upstream)
    assert len(sent) == 2, "exactly one retry"
    assert sent[0] != sent[1]
    record = stored(proxy, response.headers[RECORD])
    assert record["outcome"] == "repaired"
    assert record["status"] == 200
    assert record["upstream_status"] == 200
    assert rule in rules_of(record)
    first, second = record["attempts"]
    assert (first["upstream_status"], second["upstream_status"]) == (refused, 200)
    assert first["retried_rule"] == rule
    assert first["upstream_error"]
    assert (first["forwarded"], second["forwarded"]) == (sent[0], sent[1])
    return record, sent
