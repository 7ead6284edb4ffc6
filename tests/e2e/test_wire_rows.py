"""Every registered wire API goes through its row: routed, keyed, checked, recorded, diffed,
drawn, retried and its errors shaped as :mod:`proxy.core.wire` and :mod:`proxy.api.units` say.

One sample per API (a broken history, the rule that repairs it, a refusal text the signature
catalogue maps to that rule). A new API without a sample here fails
:func:`test_every_api_has_a_row_a_unit_a_pipeline_and_a_sample`. The upstream is an httpx
transport behind a real proxy server: it records what it was sent and answers as told.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from proxy.api.units import UNITS, unit_for
from proxy.app import create_app
from proxy.core.registry import ALL_RULES, PIPELINES
from proxy.core.signatures import match
from proxy.core.wire import WIRES, Wire, wire_for_path, wire_of_body
from proxy.errors import BadRequestBody
from proxy.errorshape import payload
from proxy.repairlog import apply_capture
from proxy.repairlog.capture import Digests
from proxy.settings import load_settings
from tests.repairlog.records import make_record
from tests.servers import running

KEY_ENV = "TOOLCALL_GUARD_TEST_WIRE_KEY"
KEY = "sk-upstream-key-123"
BASE = "http://upstream.test/v1"
ANTHROPIC_BASE = "http://upstream.test/anthropic/v1"
GEMINI_BASE = "http://upstream.test/google"
#: Each base URL setting of the one upstream, as the units name them.
BASES = {"base_url": BASE, "anthropic_base_url": ANTHROPIC_BASE, "gemini_base_url": GEMINI_BASE}


@dataclass(frozen=True)
class Sample:
    body: dict[str, Any]  # a broken history the API's default policy repairs
    rule: str  # the rule that repairs it
    refusal: str  # an upstream's text the signature catalogue maps to ``rule``
    preset: str = "openai"  # the preset whose dialect refuses the broken form
    path: str = ""  # the request path when the row's own (``/v1`` + ``Wire.path``) is not it


def _chat() -> Sample:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "Read a.txt"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "And now?"},
    ]
    refusal = (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        "call_1"
    )
    return Sample({"model": "gpt-4o", "messages": messages}, "missing_tool_result", refusal)


def _responses() -> Sample:
    items = [
        {"role": "user", "content": "Read a.txt"},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
        {"role": "user", "content": "And now?"},
    ]
    refusal = "No tool output found for function call call_1."
    body = {"model": "gpt-5", "store": False, "input": items}
    return Sample(body, "responses_missing_output", refusal)


def _messages() -> Sample:
    blocks = [{"type": "text", "text": ""}, {"type": "text", "text": "Read a.txt"}]
    messages = [{"role": "user", "content": blocks}]
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": messages,
    }
    refusal = "messages: text content blocks must be non-empty"
    return Sample(body, "messages_empty_text", refusal, preset="anthropic")


def _gemini() -> Sample:
    call = {"functionCall": {"name": "read", "args": {"path": "a.txt"}}}
    contents = [
        {"role": "user", "parts": [{"text": "Read a.txt"}]},
        {"role": "model", "parts": [call]},
        {"role": "user", "parts": [{"text": "And now?"}]},
    ]
    refusal = (
        "Please ensure that the number of function response parts is equal to the number of "
        "function call parts of the function call turn."
    )
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    return Sample({"contents": contents}, "gemini_missing_response", refusal, "gemini", path)


SAMPLES: dict[str, Sample] = {
    "chat": _chat(),
    "responses": _responses(),
    "messages": _messages(),
    "gemini": _gemini(),
}


def _path(wire: Wire, sample: Sample) -> str:
    """Where a client sends the sample: its own path, else ``/v1`` and the row's."""
    return sample.path or f"/v1{wire.path}"


def _sample(name: str, retried: bool = False) -> Sample:
    """The API's sample; skipped while its rule (or the signature a retry needs) is not
    registered yet (a new API's rules land after its row)."""
    sample = SAMPLES[name]
    if sample.rule not in ALL_RULES:
        pytest.skip(f"rule {sample.rule} is not registered yet")
    found = match(400, sample.refusal, name) if retried else None
    if retried and (found is None or found.rule != sample.rule):
        pytest.skip(f"no signature maps the refusal to {sample.rule} yet")
    return sample


def test_every_api_has_a_row_a_unit_a_pipeline_and_a_sample() -> None:
    units = {unit.name: unit for unit in UNITS.values()}
    assert set(WIRES) == set(units) == set(PIPELINES) == set(SAMPLES)
    for name, wire in WIRES.items():
        assert units[name].wire is wire
        path = _path(wire, SAMPLES[name])
        if wire.split is None:
            assert unit_for(UNITS, wire.path) is units[name]
        assert wire_for_path(path) is wire
        assert wire_for_path(f"/someone{path}") is wire


@dataclass
class Sent:
    url: str
    headers: httpx.Headers
    body: Any


@dataclass
class Upstream:
    """The httpx transport standing in for every upstream: it answers ``answers`` in turn
    (then 200) and keeps what it was sent."""

    sent: list[Sent]
    answers: list[tuple[int, dict[str, Any]]]

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(Sent(str(request.url), request.headers, orjson.loads(request.content)))
        status, body = self.answers.pop(0) if self.answers else (200, {"id": "ok"})
        return httpx.Response(status, json=body)


Start = Callable[..., tuple[str, Upstream]]


@pytest.fixture
def start(monkeypatch: pytest.MonkeyPatch) -> Iterator[Start]:
    """``start(answers, rules)``: a proxy whose one upstream serves every API, with a key."""
    monkeypatch.setenv(KEY_ENV, KEY)
    with ExitStack() as stack:

        def run(
            answers: list[tuple[int, dict[str, Any]]],
            rules: dict[str, Any] | None = None,
            preset: str = "openai",
        ) -> tuple[str, Upstream]:
            upstream = Upstream([], list(answers))
            settings = load_settings(
                upstreams={"up": {**BASES, "api_key_env": KEY_ENV, "policy": "mine"}},
                policies={"mine": {"base": preset, "rules": rules or {}}},
                routing={"default": "up"},
                repair_log={"url": "memory://", "flush_interval": 0.05},
            )
            app = create_app(settings, transport=httpx.MockTransport(upstream))
            return stack.enter_context(running(app)), upstream

        yield run


def _sent_to(wire: Wire, sample: Sample) -> str:
    """The URL the upstream gets: the unit's base URL, then what follows ``/v1`` (a row whose
    paths carry their version: the whole path)."""
    unit = next(u for u in UNITS.values() if u.wire is wire)
    rest = sample.path if wire.split is not None else wire.path
    return BASES[unit.base_key] + rest


def _key_sent(wire: Wire, headers: httpx.Headers) -> None:
    assert headers[wire.key_header] == wire.key_value(KEY).decode()
    other = {"authorization", "x-api-key", "x-goog-api-key", "api-key"} - {wire.key_header}
    assert not other & set(headers.keys())


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_routed_keyed_checked_recorded_diffed_and_drawn(name: str, start: Start) -> None:
    wire, sample = WIRES[name], _sample(name)
    url, upstream = start([], preset=sample.preset)
    client_keys = {"authorization": "Bearer client-key", "x-api-key": "client-key"}
    answer = httpx.post(url + _path(wire, sample), json=sample.body, headers=client_keys)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-toolcall-guard-outcome"] == "repaired"
    (sent,) = upstream.sent
    assert sent.url == _sent_to(wire, sample)
    _key_sent(wire, sent.headers)
    assert wire.items(sent.body) != wire.items(sample.body)
    record = _record(url, answer.headers["x-toolcall-guard-record"])
    key = ".".join(wire.location(sample.body))
    assert (record["api"], record["history_key"], record["noun"]) == (wire.name, key, wire.noun)
    assert record["views"]["forwarded"] == [wire.view(item) for item in wire.items(sent.body)]
    assert sample.rule in record["rules"]
    assert any(sample.rule in entry["rules"] for entry in record["diff"]["messages"])
    labels = {entry["role"] for entry in record["diff"]["messages"]}
    assert labels <= {wire.kind(item) for item in wire.items(sent.body)}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_refusal_is_retried_through_the_row(name: str, start: Start) -> None:
    wire, sample = WIRES[name], _sample(name, retried=True)
    refusal = payload(BadRequestBody(sample.refusal), wire.error_shape)
    url, upstream = start([(400, refusal)], rules={sample.rule: "warn"}, preset=sample.preset)
    answer = httpx.post(url + _path(wire, sample), json=sample.body)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-toolcall-guard-retried"] == sample.rule
    first, second = upstream.sent
    assert first.body == sample.body
    assert wire.items(second.body) != wire.items(sample.body)
    assert {k: v for k, v in second.body.items() if k != wire.history_key} == {
        k: v for k, v in sample.body.items() if k != wire.history_key
    }


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_proxys_own_errors_come_in_the_rows_shape(name: str, start: Start) -> None:
    wire = WIRES[name]
    url, upstream = start([])
    answer = httpx.post(url + _path(wire, SAMPLES[name]), content=b"{not json")
    assert answer.status_code == 400
    message = answer.json()["error"]["message"]
    assert message.startswith("The request body is not valid JSON")
    assert answer.json() == payload(BadRequestBody(message), wire.error_shape)
    assert not upstream.sent


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_check_recognises_and_capture_keeps_the_rows_history(name: str) -> None:
    wire, sample = WIRES[name], SAMPLES[name]
    assert wire_of_body(sample.body) is wire
    record = make_record()
    record.path = _path(wire, sample)
    record.received = record.forwarded = sample.body
    kept = apply_capture(record, "none", 1024, Digests(b"k" * 32)).received
    assert len(wire.items(kept)) == len(wire.items(sample.body))


def _record(url: str, record_id: str) -> dict[str, Any]:
    answer = httpx.get(f"{url}/repairs/{record_id}")
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]
