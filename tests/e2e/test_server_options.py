"""uvicorn as ``toolcall-guard serve`` runs it: X-Forwarded-* is read only from trusted proxies;
the collector tuned before serving."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from proxy import server
from proxy.collector import GC_THRESHOLD
from proxy.server import uvicorn_options
from proxy.settings import load_settings
from tests.servers import running


async def _echo_client(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers with the client address and scheme uvicorn put in the scope."""
    text = f"{scope['client'][0]} {scope['scheme']}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": text})


@pytest.mark.parametrize(
    ("trusted", "seen"),
    [("", "127.0.0.1 http"), ("127.0.0.1", "203.0.113.9 https"), ("10.0.0.0/8", "127.0.0.1 http")],
)
def test_forwarded_headers_only_from_configured_proxies(trusted: str, seen: str) -> None:
    settings = load_settings(server={"forwarded_allow_ips": trusted})
    options = uvicorn_options(settings)
    assert options["proxy_headers"] is bool(trusted)  # off by default: no middleware at all
    options = {k: v for k, v in options.items() if k not in ("host", "port")}
    headers = {"x-forwarded-for": "203.0.113.9", "x-forwarded-proto": "https"}
    with running(_echo_client, **(options | {"lifespan": "off"})) as url:
        assert httpx.get(url + "/", headers=headers).text == seen


@pytest.fixture
def collector() -> Iterator[None]:
    """CPython's collector settings restored (and nothing left frozen) after the test; what
    earlier tests left unreachable (sockets they never closed) is collected first, quietly, not
    by ``tune_gc`` inside the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    saved = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)


@pytest.mark.usefixtures("collector")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_serving_process_tunes_its_collector_before_it_serves(
    monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    seen: dict[str, object] = {}

    def run(app: object, **options: object) -> None:
        if options["factory"]:  # each worker builds its app from the import string
            server.app_factory()
        seen["threshold"], seen["frozen"] = gc.get_threshold(), gc.get_freeze_count()

    monkeypatch.setattr(server.uvicorn, "run", run)
    monkeypatch.setattr(server, "configure_logging", lambda _: None)  # the test's own logging
    gc.set_threshold(700, 10, 10)
    settings = load_settings()
    assert server._run(object(), settings, workers=workers, factory=workers > 1) == 0
    assert seen["threshold"] == GC_THRESHOLD
    assert isinstance(seen["frozen"], int)
    assert seen["frozen"] > 1000  # what start-up built
