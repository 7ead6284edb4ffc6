"""uvicorn as ``toolcall-guard serve`` runs it: X-Forwarded-* is read only from trusted proxies."""

from __future__ import annotations

import httpx
import pytest
from starlette.types import Receive, Scope, Send

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
