"""``/repairs`` over HTTP (in-process ASGI): filters, pages, stats, delete, errors and auth."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy.api.repairs import router
from proxy.repairlog import MemoryRepairLog, Record, RepairLog, open_repair_log
from proxy.settings import Settings
from tests.repairlog.records import T0, make_record, mixed_records, newest_first

pytestmark = pytest.mark.anyio

TOKEN_ENV = "TCG_TEST_REPAIRS_ADMIN_TOKEN"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_settings(host: str = "127.0.0.1") -> Settings:
    return Settings(server={"host": host, "admin_token_env": TOKEN_ENV})


def make_app(log: RepairLog | None, settings: Settings) -> FastAPI:
    """The same wiring as the proxy's app: the router at the root, state set."""
    app = FastAPI()
    app.state.settings = settings
    app.state.repair_log = log
    app.include_router(router)
    return app


@pytest.fixture(params=["memory", "sqlite"])
async def log(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RepairLog]:
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path}/r.sqlite3"
    repair_log = open_repair_log(url)
    await repair_log.open()
    yield repair_log
    await repair_log.close()


@pytest.fixture
def client_for() -> Callable[..., httpx.AsyncClient]:
    def build(log: RepairLog | None, settings: Settings | None = None) -> httpx.AsyncClient:
        app = make_app(log, settings or make_settings())
        return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://localhost")

    return build


@pytest.fixture
async def client(
    log: RepairLog, client_for: Callable[..., httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    async with client_for(log) as http:
        yield http


@pytest.fixture
async def records(log: RepairLog) -> list[Record]:
    stored = mixed_records(60)
    await log.write(stored)
    return stored


def assert_error(response: httpx.Response, status: int, param: str | None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["param"] == param
    assert error["message"]
    return dict(error)


async def walk(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = await client.get("/repairs", params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"data", "next_cursor"}
        rows += body["data"]
        cursor = body["next_cursor"]
        if cursor is None:
            return rows
    raise AssertionError("pagination did not end")


async def test_list_defaults_to_50_newest_first(
    client: httpx.AsyncClient, records: list[Record]
) -> None:
    response = await client.get("/repairs")
    body = response.json()
    assert [row["id"] for row in body["data"]] == newest_first(records)[:50]
    assert isinstance(body["next_cursor"], str)
    summary = body["data"][0]
    assert not {"received", "forwarded", "upstream_error", "diff"} & set(summary)
    assert {"id", "created_at", "upstream", "outcome", "rules", "findings"} <= set(summary)


@pytest.mark.parametrize("limit", [1, 7, 50, 500])
async def test_pages_cover_everything_once(
    client: httpx.AsyncClient, records: list[Record], limit: int
) -> None:
    rows = await walk(client, limit=limit)
    assert [row["id"] for row in rows] == newest_first(records)


@pytest.mark.parametrize(
    "params",
    [
        {"upstream": "gemini"},
        {"model": "deepseek-chat"},
        {"outcome": "upstream_rejected"},
        {"rule": "missing_tool_result"},
        {"ending": "upstream_cut"},
        {"ending": "client_gone", "outcome": "repaired"},
        {"rule": "orphan_tool_result", "upstream": "openai", "outcome": "repaired"},
        {"since": "2025-03-01T12:00:10Z", "until": "2025-03-01T12:00:40+00:00"},
        {"since": "2025-03-01T13:00:20+01:00"},  # = 12:00:20 UTC
        {"until": "2025-03-01T12:00:05"},  # naive: UTC
    ],
)
async def test_filters(
    client: httpx.AsyncClient, records: list[Record], params: dict[str, str]
) -> None:
    rows = await walk(client, limit=4, **params)

    def keep(r: Record) -> bool:
        checks = {
            "upstream": lambda v: r.upstream == v,
            "model": lambda v: r.model == v,
            "outcome": lambda v: r.outcome == v,
            "ending": lambda v: r.ending == v,
            "rule": lambda v: v in {f["rule"] for f in r.findings},
            "since": lambda v: r.created_at >= _moment(v),
            "until": lambda v: r.created_at < _moment(v),
        }
        return all(checks[name](value) for name, value in params.items())

    expected = newest_first([r for r in records if keep(r)])
    assert expected  # every case selects something
    assert [row["id"] for row in rows] == expected


def _moment(text: str) -> Any:
    from datetime import UTC, datetime

    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "501"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"outcome": "clean"}, "outcome"),
        ({"ending": "cut"}, "ending"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2025-13-01"}, "until"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "WyJ4IiwiMSJd"}, "cursor"),  # base64 of ["x","1"]: ours in shape only
        ({"upstream": "open\x00ai"}, "upstream"),
        ({"rule": "x" * 1001}, "rule"),
        ({"since": "0001-01-01T00:00:00+01:00"}, "since"),
    ],
)
async def test_bad_parameters_are_400_naming_them(
    client: httpx.AsyncClient, params: dict[str, str], param: str
) -> None:
    error = assert_error(await client.get("/repairs", params=params), 400, param)
    assert error["type"] == "invalid_request_error"


async def test_one_record_with_its_diff(client: httpx.AsyncClient, log: RepairLog) -> None:
    record = make_record(rules=("orphan_tool_result",))
    record.received = {"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "x"}]}
    record.forwarded = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}
    await log.write([record])

    body = (await client.get(f"/repairs/{record.id}")).json()

    assert body["id"] == record.id
    assert body["received"] == record.received
    assert body["forwarded"] == record.forwarded
    assert body["findings"] == record.findings
    assert body["created_at"] == record.created_at.isoformat(timespec="microseconds")
    ops = [(e["op"], e["received"], e["forwarded"]) for e in body["diff"]["messages"]]
    assert ops == [("removed", 0, None), ("added", None, 0)]
    assert body["diff"]["messages"][0]["rules"] == ["orphan_tool_result"]
    assert "--- received" in body["diff"]["unified"]


async def test_rejected_record_has_no_diff(client: httpx.AsyncClient, log: RepairLog) -> None:
    record = make_record(outcome="rejected")
    await log.write([record])
    body = (await client.get(f"/repairs/{record.id}")).json()
    assert body["forwarded"] is None
    assert body["diff"] is None


@pytest.mark.parametrize("record_id", ["nope", "01900000-0000-7000-8000-000000000000", "a%00b"])
async def test_unknown_record_is_404(
    client: httpx.AsyncClient, records: list[Record], record_id: str
) -> None:
    error = assert_error(await client.get(f"/repairs/{record_id}"), 404, "record_id")
    assert error["code"] == "record_not_found"


async def test_stats(client: httpx.AsyncClient, records: list[Record]) -> None:
    stats = (await client.get("/repairs/stats")).json()
    assert stats["total"] == 60
    assert stats["by_outcome"] == dict.fromkeys(
        ["repaired", "rejected", "warned", "upstream_rejected"], 15
    )
    assert stats["by_upstream"] == {"openai": 20, "deepseek": 20, "gemini": 20}
    assert stats["by_rule"] == {"orphan_tool_result": 40, "missing_tool_result": 20}
    assert stats["by_error_kind"] == {"missing_tool_result": 15}
    assert sum(stats["by_ending"].values()) == 60  # over HTTP too: the model keeps them
    assert stats["repeats"] == 0
    assert stats["since"] is None
    later = (await client.get("/repairs/stats", params={"since": "2025-03-01T12:00:57Z"})).json()
    assert later["total"] == 3  # records 57, 58 and 59 (59 shares second 58)
    assert later["since"] == "2025-03-01T12:00:57.000000+00:00"
    assert_error(await client.get("/repairs/stats", params={"since": "soon"}), 400, "since")


async def test_delete_before(client: httpx.AsyncClient, records: list[Record]) -> None:
    response = await client.delete("/repairs", params={"before": "2025-03-01T12:00:30Z"})
    assert response.status_code == 200
    assert response.json() == {"deleted": 30}  # seconds 0..29: records 0..30 minus record 30
    remaining = await walk(client, limit=500)
    assert all(row["created_at"] >= "2025-03-01T12:00:30" for row in remaining)
    assert len(remaining) == 30
    again = await client.delete("/repairs", params={"before": "2025-03-01T12:00:30Z"})
    assert again.json() == {"deleted": 0}


async def test_delete_needs_before(client: httpx.AsyncClient) -> None:
    assert_error(await client.delete("/repairs"), 400, "before")
    assert_error(await client.delete("/repairs", params={"before": "x"}), 400, "before")


async def test_unavailable_log_is_503(
    client_for: Callable[..., httpx.AsyncClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    closed = MemoryRepairLog()  # never opened: every call raises RepairLogUnavailable
    async with client_for(closed) as http:
        for response in (await http.get("/repairs"), await http.get("/repairs/stats")):
            assert_error(response, 503, None)
    async with client_for(None) as http:
        assert_error(await http.get("/repairs/x"), 503, None)


async def test_token_required_when_set(
    log: RepairLog,
    client_for: Callable[..., httpx.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "s3cret-token")
    async with client_for(log) as http:
        missing = await http.get("/repairs")
        error = assert_error(missing, 401, None)
        assert TOKEN_ENV in error["message"]
        assert missing.headers["www-authenticate"] == "Bearer"
        for header in ("Bearer wrong", "Basic s3cret-token", "s3cret-token", "Bearer s3cret"):
            response = await http.get("/repairs", headers={"Authorization": header})
            assert_error(response, 401, None)
        ok = {"Authorization": "Bearer s3cret-token"}
        assert (await http.get("/repairs", headers=ok)).status_code == 200
        assert (await http.get("/repairs/stats", headers=ok)).status_code == 200
        assert (await http.delete("/repairs?before=2000-01-01", headers=ok)).status_code == 200
        assert_error(await http.get("/repairs/nope", headers=ok), 404, "record_id")
        assert_error(await http.get("/repairs/nope"), 401, None)  # auth before lookup


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::"])
async def test_no_token_beyond_loopback_is_403_saying_how(
    log: RepairLog,
    client_for: Callable[..., httpx.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
    host: str,
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    async with client_for(log, make_settings(host)) as http:
        for response in (
            await http.get("/repairs"),
            await http.get("/repairs/stats"),
            await http.delete("/repairs?before=2030-01-01"),
        ):
            error = assert_error(response, 403, None)
            assert TOKEN_ENV in error["message"]
            assert "server.admin_token_env" in error["message"]
    monkeypatch.setenv(TOKEN_ENV, "tok")
    async with client_for(log, make_settings(host)) as http:
        response = await http.get("/repairs", headers={"Authorization": "Bearer tok"})
        assert response.status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
async def test_no_token_on_loopback_is_open(
    log: RepairLog,
    client_for: Callable[..., httpx.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
    host: str,
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    async with client_for(log, make_settings(host)) as http:
        assert (await http.get("/repairs")).status_code == 200


def test_openapi_documents_the_endpoints() -> None:
    schema = make_app(MemoryRepairLog(), make_settings()).openapi()
    paths = schema["paths"]
    assert set(paths) == {"/repairs", "/repairs/stats", "/repairs/{record_id}"}
    listing = paths["/repairs"]["get"]
    assert {p["name"] for p in listing["parameters"]} == {
        "upstream",
        "model",
        "outcome",
        "ending",
        "rule",
        "since",
        "until",
        "limit",
        "cursor",
        "conversation",
    }
    [ending] = [p for p in listing["parameters"] if p["name"] == "ending"]
    assert "upstream_cut" in str(ending["schema"])
    summary = schema["components"]["schemas"]["RecordSummary"]["properties"]
    assert "client_gone" in str(summary["ending"])
    ok = listing["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/RecordPage")
    for code in ("400", "401", "403"):
        assert code in listing["responses"]
    assert "404" in paths["/repairs/{record_id}"]["get"]["responses"]
    assert "delete" in paths["/repairs"]
    assert "RecordDetail" in schema["components"]["schemas"]


async def test_created_at_order_survives_time_zones(
    client: httpx.AsyncClient, log: RepairLog
) -> None:
    from datetime import timezone

    east = make_record(1, at=(T0 + timedelta(hours=1)).astimezone(timezone(timedelta(hours=9))))
    west = make_record(2, at=T0.astimezone(timezone(timedelta(hours=-8))))
    await log.write([west, east])
    rows = (await client.get("/repairs")).json()["data"]
    assert [row["id"] for row in rows] == [east.id, west.id]


PARAMS = ("upstream", "model", "outcome", "rule", "since", "until", "limit", "cursor", "before")
values = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["0", "-1", "500", "1e3", "2025-03-01T12:00:00Z", "0001-01-01T00:00:00+14:00"]),
    st.sampled_from(["9999-12-31T23:59:59-14:00", "warned", "WyIiLCIiXQ", "\x00", "%00"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=st.dictionaries(st.sampled_from(PARAMS), values, max_size=4),
    record_id=st.text(min_size=1, max_size=40),
    backend=st.sampled_from(["memory", "sqlite"]),
)
def test_no_input_gives_a_5xx(params: dict[str, str], record_id: str, backend: str) -> None:
    async def run(folder: str) -> None:
        log = open_repair_log("memory://" if backend == "memory" else f"sqlite:///{folder}/r.db")
        await log.open()
        await log.write(mixed_records(5))
        app = make_app(log, make_settings())
        transport = httpx.ASGITransport(app)
        try:
            async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
                responses = [
                    await http.get("/repairs", params=params),
                    await http.get("/repairs/stats", params=params),
                    await http.get("/repairs/" + quote(record_id, safe="")),
                    await http.delete("/repairs", params=params),
                ]
        finally:
            await log.close()
        for response in responses:
            assert response.status_code < 500, (response.request.url, response.text)
            if response.status_code >= 400 and response.status_code != 405:
                assert "error" in response.json() or "detail" in response.json()

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(run(folder))
