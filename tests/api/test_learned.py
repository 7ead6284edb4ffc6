"""Learned field strips: the bounded store, the up-front strip, ``/repairs/learned`` over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from proxy.api import learned, repairs
from proxy.api.learned import LearnedStrips
from proxy.core.policy import build_policy
from proxy.core.retry import plan_retry
from proxy.repairlog import MemoryRepairLog
from proxy.settings import Settings

TOKEN_ENV = "TCG_TEST_LEARNED_ADMIN_TOKEN"
EVIDENCE = "Unknown parameter: 'messages[1].tool_calls[0].index'."


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def body(*, index: bool = True, model: str = "gpt-4o") -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    if index:
        call["index"] = 0
    return {
        "model": model,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    }


def test_a_retry_teaches_the_store_and_the_next_request_is_stripped_up_front() -> None:
    store = LearnedStrips(clock=Clock())
    plan = plan_retry("chat", body(), 400, EVIDENCE, build_policy("openai"))
    assert plan is not None
    assert plan.learned is not None
    store.learn("openai", "gpt-4o", plan.learned, EVIDENCE, reporter="body:1")
    # one refused request is not enough: it applies to nobody yet
    assert store.strip("openai", "gpt-4o", body())[1] == []
    store.learn("openai", "gpt-4o", plan.learned, EVIDENCE, reporter="body:1")  # the same again
    assert store.strip("openai", "gpt-4o", body())[1] == []
    store.learn("openai", "gpt-4o", plan.learned, EVIDENCE, reporter="body:2")
    later = body()
    stripped, findings = store.strip("openai", "gpt-4o", later)
    assert stripped == body(index=False)
    assert later == body()  # never mutated
    assert [(f.rule, f.action, f.path) for f in findings] == [
        ("learned_field_strip", "strip", "messages[1].tool_calls[0].index")
    ]
    assert EVIDENCE in findings[0].detail
    assert store.entries()[0].applied == 1


def test_only_the_same_upstream_and_model() -> None:
    store = LearnedStrips(confirmations=1, clock=Clock())
    store.learn("groq", "llama-3", "messages[*].tool_calls[*].index", EVIDENCE, reporter="r")
    for upstream, model in (("openai", "llama-3"), ("groq", "llama-4"), ("groq", None)):
        same = body(model=model or "x")
        out, findings = store.strip(upstream, model, same)
        assert out is same
        assert findings == []
    clean = body(index=False, model="llama-3")
    out, findings = store.strip("groq", "llama-3", clean)
    assert out is clean  # nothing to strip: the very same object (original bytes forwarded)
    assert findings == []


def test_entries_expire() -> None:
    clock = Clock()
    store = LearnedStrips(ttl=60, confirmations=1, clock=clock)
    store.learn("groq", "m", "store", "property 'store' is unsupported", reporter="r")
    clock.now += 59
    assert store.strip("groq", "m", {"model": "m", "store": True})[0] == {"model": "m"}
    clock.now += 1
    assert store.strip("groq", "m", {"model": "m", "store": True})[0] == {
        "model": "m",
        "store": True,
    }
    assert store.entries() == []


def test_learning_again_renews_and_size_is_bounded() -> None:
    clock = Clock()
    store = LearnedStrips(ttl=100, max_entries=3, confirmations=1, clock=clock)
    for i in range(3):
        store.learn("up", "m", f"f{i}", "e", reporter="r")
        clock.now += 1
    store.learn("up", "m", "f0", "again", reporter="r")  # renewed: now the newest
    store.learn("up", "m", "f3", "e", reporter="r")  # over the bound: the oldest (f1) goes
    assert [e.field for e in store.entries()] == ["f2", "f0", "f3"]
    assert len(store) == 3
    assert store.entries()[1].evidence == "again"
    with pytest.raises(ValueError, match="ttl"):
        LearnedStrips(ttl=0)


# --- over HTTP --------------------------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_app(store: LearnedStrips | None, host: str = "127.0.0.1") -> FastAPI:
    """The proxy's wiring: the learned router before the repairs router."""
    app = FastAPI()
    app.state.settings = Settings(server={"host": host, "admin_token_env": TOKEN_ENV})
    app.state.repair_log = MemoryRepairLog()
    if store is not None:
        app.state.learned = store
    app.include_router(learned.router)
    app.include_router(repairs.router)
    return app


@pytest.fixture
async def client(
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[httpx.AsyncClient, LearnedStrips]]:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    store = LearnedStrips(clock=Clock())
    transport = httpx.ASGITransport(make_app(store))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        yield http, store


@pytest.mark.anyio
async def test_list_and_clear(client: tuple[httpx.AsyncClient, LearnedStrips]) -> None:
    http, store = client
    assert (await http.get("/repairs/learned")).json() == {"data": []}
    store.learn("mistral", "mistral-large", "messages[*].refusal", "extra_forbidden", reporter="r")
    answer = await http.get("/repairs/learned")
    assert answer.status_code == 200
    (entry,) = answer.json()["data"]
    assert entry["upstream"] == "mistral"
    assert entry["field"] == "messages[*].refusal"
    assert (entry["confirmations"], entry["confirmed"]) == (1, False)
    assert entry["evidence"] == "extra_forbidden"
    assert entry["learned_at"] == "2023-11-14T22:13:20Z"
    assert entry["expires_at"] == "2023-11-14T23:13:20Z"
    gone = await http.delete("/repairs/learned")
    assert gone.json() == {"deleted": 1}
    assert (await http.get("/repairs/learned")).json() == {"data": []}
    assert len(store) == 0


@pytest.mark.anyio
async def test_admin_auth_like_repairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, "s3cret")
    transport = httpx.ASGITransport(make_app(LearnedStrips()))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        assert (await http.get("/repairs/learned")).status_code == 401
        assert (await http.delete("/repairs/learned")).status_code == 401
        ok = await http.get("/repairs/learned", headers={"authorization": "Bearer s3cret"})
        assert ok.status_code == 200
    monkeypatch.delenv(TOKEN_ENV)
    transport = httpx.ASGITransport(make_app(LearnedStrips(), host="0.0.0.0"))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        assert (await http.get("/repairs/learned")).status_code == 403


@pytest.mark.anyio
async def test_without_a_store_it_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    transport = httpx.ASGITransport(make_app(None))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        answer = await http.get("/repairs/learned")
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "learned_strips_unavailable"


def test_a_shared_table_confirms_and_forgets_across_replicas() -> None:
    """What :mod:`proxy.api.learned_shared` does with a store, without the database."""
    key = ("groq", "m", "messages[*].refusal")
    here, there = LearnedStrips(clock=Clock()), LearnedStrips(clock=Clock())
    here.learn("groq", "m", key[2], "refused", reporter="body:1")
    assert here.drain() == []  # not sharing: nothing waits to be written
    there.sharing = True
    there.learn("groq", "m", key[2], "refused", reporter="body:2")
    [(reported, reporter, _, expires_at)] = there.drain()
    assert (reported, reporter) == (key, "body:2")
    assert there.drain() == []
    # the table holds both reports: the second replica's confirms the first's
    here.absorb({key: ({"body:1", "body:2"}, "refused", expires_at)})
    [entry] = here.entries()
    assert (entry.confirmed, entry.shared, sorted(entry.reporters)) == (
        True,
        True,
        ["body:1", "body:2"],
    )
    here.absorb({})  # gone from the table: forgotten elsewhere
    assert here.entries() == []
