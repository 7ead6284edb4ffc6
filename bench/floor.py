"""The floor: the least a Python reverse proxy can do, raw ASGI on uvicorn plus an aiohttp client.

It reads the body, forwards it with the client's headers (minus hop-by-hop, host and length),
and streams the upstream's answer back chunk by chunk. No parsing, no routing, no logging:
whatever toolcall-guard adds on top of this is its own cost.

``Floor(upstream, parse=True)`` ("floor + parse") also parses every POST body once with orjson
and holds the result until the answer is relayed, as any proxy that reads the body must: the
least a checking proxy pays, measured beside the floor (the ceiling of its throughput ratio).
"""

from __future__ import annotations

import aiohttp
import orjson
from starlette.types import Receive, Scope, Send

_DROP = frozenset(
    {b"host", b"content-length", b"connection", b"keep-alive", b"transfer-encoding", b"te"}
)
_SKIP = ("Accept", "Accept-Encoding", "Content-Type", "User-Agent")


class Floor:
    """A pass-through ASGI app relaying every request to ``upstream`` (a base URL)."""

    def __init__(self, upstream: str, *, parse: bool = False) -> None:
        self.upstream = upstream.rstrip("/")
        self.parse = parse
        self.session: aiohttp.ClientSession | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        parts = []
        while True:
            message = await receive()
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(parts)
        parsed = orjson.loads(body) if self.parse and scope["method"] == "POST" else None
        headers = [
            (k.decode("latin-1"), v.decode("latin-1"))
            for k, v in scope["headers"]
            if k not in _DROP
        ]
        assert self.session is not None
        url = self.upstream + scope["path"]
        async with self.session.request(
            scope["method"], url, data=body, headers=headers
        ) as response:
            out = [(k, v) for k, v in response.raw_headers if k.lower() not in _DROP]
            await send({"type": "http.response.start", "status": response.status, "headers": out})
            async for chunk in response.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        del parsed  # freed here, after the answer, as the proxy frees its parse

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # No total timeout: aiohttp then skips its per-request timer (measurably
                # cheaper); a read timeout is what a streaming proxy needs anyway.
                self.session = aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                    timeout=aiohttp.ClientTimeout(total=None, connect=10, sock_read=600),
                    auto_decompress=False,
                    skip_auto_headers=_SKIP,
                    cookie_jar=aiohttp.DummyCookieJar(),
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.session is not None:
                    await self.session.close()
                await send({"type": "lifespan.shutdown.complete"})
                return
