"""The admin endpoints against their own OpenAPI document (schemathesis), and locked down.

schemathesis generates requests from the app's ``/openapi.json`` (``/repairs…``, ``/healthz``,
``/readyz``): schema-valid ones and, for the endpoints taking parameters, schema-violating ones.
Every answer must be below 500, have a documented status and content type, and match its
documented schema. Not checked: that every schema-valid request succeeds (an opaque ``cursor``
the API never issued is rightly 400), and that every schema-violating one fails (a Unix time
is a fine ``since``).

Then the lock: beyond loopback without an admin token every admin route answers 403 saying how
to set one; with a token, no token or a wrong one is 401; and no route escapes the guard.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import httpx
import pytest
import schemathesis
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from proxy.api.auth import require_admin
from proxy.app import create_app
from proxy.repairlog import MemoryRepairLog
from proxy.repairlog.record import utcnow
from tests.e2e.conftest import proxy_settings
from tests.repairlog.records import mixed_records
from tests.servers import running

TOKEN_ENV = "TCG_HARDENING_ADMIN_TOKEN"
TOKEN = "admin-token-for-the-hardening-tests"
#: Routes open to all by design: probes, the viewer's static files (and / leading to them).
OPEN_ROUTES = {"/", "/healthz", "/readyz", "/ui", "/ui/{name}", "/ui/{asset}"}


def _serve(stack: ExitStack, host: str = "127.0.0.1") -> tuple[str, MemoryRepairLog]:
    log = MemoryRepairLog()
    asyncio.run(_fill(log))
    settings_ = proxy_settings(
        {"openai": "http://127.0.0.1:9/v1"}, server={"host": host, "admin_token_env": TOKEN_ENV}
    )
    url = stack.enter_context(running(create_app(settings_, repair_log=log)))
    return url, log


async def _fill(log: MemoryRepairLog) -> None:
    """Recent records (older ones would fall to the retention pass at start)."""
    await log.open()
    now = utcnow()
    records = mixed_records(30)
    for n, record in enumerate(records):
        record.created_at = now - timedelta(seconds=n)
    await log.write(records)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, schemathesis.BaseSchema]]:
    with ExitStack() as stack:
        url, _ = _serve(stack)
        yield url, schemathesis.openapi.from_url(url + "/openapi.json")


def _operations(schema: schemathesis.BaseSchema) -> list[Any]:
    return [result.ok() for result in schema.get_all_operations()]


def test_the_document_covers_the_admin_and_health_endpoints(
    server: tuple[str, schemathesis.BaseSchema],
) -> None:
    _, schema = server
    labels = {op.label for op in _operations(schema)}
    assert labels == {
        "GET /healthz",
        "GET /readyz",
        "GET /repairs",
        "DELETE /repairs",
        "GET /repairs/stats",
        "GET /repairs/learned",
        "DELETE /repairs/learned",
        "GET /repairs/{record_id}",
    }


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_every_answer_matches_the_document(
    server: tuple[str, schemathesis.BaseSchema], mode: GenerationMode
) -> None:
    url, schema = server
    excluded = [positive_data_acceptance, negative_data_rejection]
    tried = 0
    for operation in _operations(schema):
        if mode is GenerationMode.NEGATIVE and not operation.definition.raw.get("parameters"):
            continue  # nothing to violate in an endpoint without parameters

        @settings(
            max_examples=25,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def check(case: Any) -> None:
            response = case.call(base_url=url)
            assert response.status_code < 500, response.text
            case.validate_response(response, excluded_checks=excluded)

        check()
        tried += 1
    assert tried >= 4


def test_a_stored_record_and_a_missing_one_match_the_document(
    server: tuple[str, schemathesis.BaseSchema], http: httpx.Client
) -> None:
    _, schema = server
    with ExitStack() as stack:  # a log of its own: the generated DELETEs may empty the shared one
        url, _ = _serve(stack)
        _check_records(url, schema, http)


def _check_records(url: str, schema: schemathesis.BaseSchema, http: httpx.Client) -> None:
    [record_op] = [op for op in _operations(schema) if op.label == "GET /repairs/{record_id}"]
    page = http.get(url + "/repairs", params={"limit": 1}).json()
    record_id = page["data"][0]["id"]
    for wanted, status in ((record_id, 200), ("no-such-record", 404)):
        case = record_op.Case(path_parameters={"record_id": wanted})
        response = case.call(base_url=url)
        assert response.status_code == status
        case.validate_response(response, excluded_checks=[positive_data_acceptance])


# --- the lock ------------------------------------------------------------------------------


def _admin_requests() -> list[tuple[str, str]]:
    return [
        ("GET", "/repairs"),
        ("GET", "/repairs/stats"),
        ("GET", "/repairs/0190c0de-0000-7000-8000-000000000000"),
        ("DELETE", "/repairs?before=2000-01-01T00:00:00Z"),
        ("GET", "/metrics"),  # upstream names, models and traffic
        ("GET", "/openapi.json"),  # every endpoint
    ]


@pytest.fixture(scope="module")
def exposed() -> Iterator[str]:
    """A proxy configured to listen on 0.0.0.0 (served on loopback for the test)."""
    with ExitStack() as stack:
        yield _serve(stack, host="0.0.0.0")[0]


@pytest.fixture
def beyond_loopback(exposed: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], str]:
    """``serve(with_token)``: the exposed proxy, its admin token set or not (read per request)."""

    def serve(with_token: bool) -> str:
        if with_token:
            monkeypatch.setenv(TOKEN_ENV, TOKEN)
        else:
            monkeypatch.delenv(TOKEN_ENV, raising=False)
        return exposed

    return serve


@pytest.mark.parametrize(("method", "path"), _admin_requests())
def test_beyond_loopback_without_a_token_admin_is_403(
    beyond_loopback: Callable[[bool], str], http: httpx.Client, method: str, path: str
) -> None:
    url = beyond_loopback(False)
    response = http.request(method, url + path, headers={"authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 403
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("permission_error", "admin_token_required")
    assert TOKEN_ENV in error["message"]  # says how to set one
    assert http.get(url + "/healthz").status_code == 200  # probes stay open


@pytest.mark.parametrize(("method", "path"), _admin_requests())
@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer wrong", f"Basic {TOKEN}", f"Bearer {TOKEN}x", TOKEN],
)
def test_with_a_token_a_missing_or_wrong_one_is_401(
    beyond_loopback: Callable[[bool], str],
    http: httpx.Client,
    method: str,
    path: str,
    authorization: str | None,
) -> None:
    url = beyond_loopback(True)
    headers = {} if authorization is None else {"authorization": authorization}
    response = http.request(method, url + path, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    error = response.json()["error"]
    assert error["code"] == "invalid_admin_token"
    assert TOKEN not in response.text
    right = http.request(method, url + path, headers={"authorization": f"Bearer {TOKEN}"})
    assert right.status_code in (200, 404)


def test_no_route_escapes_the_admin_guard() -> None:
    app = create_app(proxy_settings({"openai": "http://127.0.0.1:9/v1"}))
    unguarded = {
        route.path
        for route in app.routes
        if isinstance(route, APIRoute)
        and require_admin not in {d.call for d in route.dependant.dependencies}
    }
    assert unguarded <= OPEN_ROUTES, unguarded - OPEN_ROUTES
    assert "/repairs" not in unguarded
