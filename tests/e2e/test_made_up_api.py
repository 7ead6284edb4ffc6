"""A wire API is its package plus its rows (issue 32 item 2): a made-up API, defined here with
nothing but a history view, one rule, one catalogue row, a :class:`Wire` row and a unit row,
registered for the test, is routed, checked, recorded, diffed, drawn, retried and
error-shaped by the proxy without one line of the proxy naming it.

The made-up API ("notes", ``POST /v1/notes``) keeps its history under ``notes``: items
``{"who": …, "say": …}``. Its one rule drops a note with nothing to say; its upstream refuses
such a note with ``Empty note at notes.{i}``; its clients parse Anthropic's error shape.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import orjson
import pytest

from proxy.api import units
from proxy.app import create_app
from proxy.core import policy, registry, signatures
from proxy.core import wire as rows
from proxy.core.errortext import sig
from proxy.core.history import CopyOnWrite, MalformedHistory
from proxy.core.rule import Hit, Params, rule
from proxy.core.views import view_of
from proxy.errors import BadRequestBody
from proxy.errorshape import payload
from proxy.settings import load_settings
from tests.servers import running

# --- the made-up API's package: its history view and its rule --------------------------------


class Notes(CopyOnWrite):
    """The ``notes`` of a body."""

    @classmethod
    def of(cls, body: Any, model: str = "") -> Notes:
        if type(body) is not dict or type(body.get("notes")) is not list:
            raise MalformedHistory("notes: a list is required.", "notes")
        return cls(body["notes"], request=body)

    @property
    def tool_free(self) -> bool:
        return True

    def path(self, i: int, where: str = "") -> str:
        origin = self.origin(i)
        return f"notes[{'+' if origin is None else origin}]{where}"


@rule("notes_empty", api="notes", hint="Leave out notes that say nothing.")
def notes_empty(history: Notes, params: Params) -> list[Hit]:
    """A note whose ``say`` is empty (the made-up upstream's ``Empty note at notes.{i}``)."""
    return [Hit(i, ".say", "empty note") for i, n in enumerate(history.messages) if not n["say"]]


@notes_empty.repair("drop")
def _drop(history: Notes, hits: Sequence[Hit], params: Params) -> Notes:
    return history.without({h.index for h in hits})


# --- its rows ------------------------------------------------------------------------------------

NOTES = rows.Wire(
    name="notes",
    path="/notes",
    history_key="notes",
    history=Notes.of,
    kind=lambda item: item.get("who") if type(item) is dict else None,
    recognises=lambda body: type(body) is dict and "notes" in body,
    error_shape="anthropic",
    view=lambda item: view_of(str(item.get("who")), body=str(item.get("say"))),
    noun="notes",
)
UNIT = units.WireApi(NOTES, units.count_only)
REFUSAL = sig("T1", "made-up", "notes_empty", r"Empty note at notes\.(?P<index>\d+)", api="notes")


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The made-up API's rows in the registries, for this test only."""
    monkeypatch.setitem(rows.WIRES, "notes", NOTES)
    monkeypatch.setitem(units.UNITS, NOTES.path, UNIT)
    monkeypatch.setitem(registry.PIPELINES, "notes", (notes_empty,))
    monkeypatch.setitem(registry.ALL_RULES, notes_empty.name, notes_empty)
    monkeypatch.setattr(signatures, "SIGNATURES", (*signatures.SIGNATURES, REFUSAL))
    for preset in policy.PROVIDER_PRESETS.values():
        monkeypatch.setitem(preset, notes_empty.name, "repair")


WARN = {"notes_empty": "warn"}


class Upstream:
    """Refuses a body holding an empty note once when told to; keeps what it was sent."""

    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse
        self.sent: list[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = orjson.loads(request.content)
        self.sent.append(body)
        empty = [i for i, n in enumerate(body["notes"]) if not n["say"]]
        if empty and self.refuse:
            return httpx.Response(400, json={"error": f"Empty note at notes.{empty[0]}"})
        return httpx.Response(200, json={"ok": True, "seen": len(body["notes"])})


@pytest.fixture
def proxy(registered: None, request: pytest.FixtureRequest) -> Iterator[tuple[str, Upstream]]:
    upstream = Upstream(refuse=getattr(request, "param", False))
    settings = load_settings(
        upstreams={"up": {"base_url": "http://notes.test/v1", "policy": "mine"}},
        # Refusing upstream: the rule only warns up front, so the refusal is what repairs it.
        policies={"mine": {"base": "openai", "rules": WARN if upstream.refuse else {}}},
        routing={"default": "up"},
        repair_log={"url": "memory://", "flush_interval": 0.05},
    )
    with running(create_app(settings, transport=httpx.MockTransport(upstream))) as url:
        yield url, upstream


BODY = {
    "notes": [{"who": "ann", "say": "hi"}, {"who": "bob", "say": ""}, {"who": "ann", "say": "?"}]
}


def test_routed_checked_recorded_diffed_and_drawn(proxy: tuple[str, Upstream]) -> None:
    url, upstream = proxy
    answer = httpx.post(f"{url}/up/v1/notes", json=BODY)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-toolcall-guard-outcome"] == "repaired"
    assert answer.headers["x-toolcall-guard-rules"] == "notes_empty=1"
    (sent,) = upstream.sent
    assert sent == {"notes": [BODY["notes"][0], BODY["notes"][2]]}
    record = httpx.get(f"{url}/repairs/{answer.headers['x-toolcall-guard-record']}").json()
    assert (record["api"], record["history_key"], record["noun"]) == ("notes", "notes", "notes")
    assert record["findings"][0]["path"] == "notes[1].say"
    assert record["views"]["received"][1] == view_of("bob", body="")
    assert any("notes_empty" in entry["rules"] for entry in record["diff"]["messages"])


@pytest.mark.parametrize("proxy", [True], indirect=True)
def test_a_refusal_in_its_own_words_is_retried(proxy: tuple[str, Upstream]) -> None:
    url, upstream = proxy
    answer = httpx.post(f"{url}/v1/notes", json=BODY)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-toolcall-guard-retried"] == "notes_empty"
    first, second = upstream.sent
    assert first == BODY
    assert second == {"notes": [BODY["notes"][0], BODY["notes"][2]]}


def test_its_errors_come_in_its_rows_shape(proxy: tuple[str, Upstream]) -> None:
    url, upstream = proxy
    answer = httpx.post(f"{url}/v1/notes", content=b'{"notes": 3}')
    assert answer.status_code == 400
    assert answer.json() == payload(BadRequestBody("notes: a list is required."), "anthropic")
    assert not upstream.sent
