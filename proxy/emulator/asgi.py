"""The emulators' raw ASGI plumbing: lifespan, request body and headers, JSON answers, rejections
in the provider's content type, and SSE streams (paced, unbuffered)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from proxy.emulator.common import Rejection

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = b"application/json"
_RETRY_STATUSES = (429, 503)


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """A request as the emulator received it (headers keyed in lower case)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


async def lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_body(receive: Receive) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # http.disconnect
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def accept(
    scope: Scope, receive: Receive, send: Send, received: list[ReceivedRequest] | None
) -> ReceivedRequest | None:
    """The HTTP request of `scope`, appended to `received` when a list is given; None for a
    lifespan scope (served here) or any other kind."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return None
    if scope["type"] != "http":
        return None
    request = await read_request(scope, receive)
    if received is not None:
        received.append(request)
    return request


async def read_request(scope: Scope, receive: Receive) -> ReceivedRequest:
    """The HTTP request of `scope`, its body read in full."""
    return ReceivedRequest(
        method=scope["method"],
        path=scope["path"],
        headers=headers(scope["headers"]),
        body=await read_body(receive),
    )


def headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for key, value in raw:
        name, text = key.decode("latin-1").lower(), value.decode("latin-1")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text
    return headers


def int_header(headers: dict[str, str], name: str) -> int | None:
    value = headers.get(name, "")
    return int(value) if value.strip().isdigit() else None


def float_header(headers: dict[str, str], name: str, default: float) -> float:
    try:
        return float(headers[name])
    except (KeyError, ValueError):
        return default


async def reject(send: Send, rejection: Rejection) -> None:
    gemini = rejection.body[:1] == b"["  # only Gemini answers an array
    content_type = b"application/json; charset=UTF-8" if gemini else _JSON
    extra = list(rejection.headers)
    if rejection.status in _RETRY_STATUSES and not any(k == b"retry-after" for k, _ in extra):
        extra.append((b"retry-after", b"1"))
    await respond(send, rejection.status, rejection.body, content_type, extra)


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = _JSON,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": status, "headers": headers + (extra or [])}
    )
    await send({"type": "http.response.body", "body": body})


def digest(body: bytes) -> tuple[bytes, bytes]:
    """``x-emulator-body-sha256``: what the emulator received, for byte-for-byte checks."""
    return b"x-emulator-body-sha256", hashlib.sha256(body).hexdigest().encode()


async def stream(
    send: Send,
    frames: list[bytes],
    pause: float,
    extra: list[tuple[bytes, bytes]] | None = None,
    content_type: bytes = b"text/event-stream",
) -> None:
    headers = [(b"content-type", content_type), (b"cache-control", b"no-cache")]
    headers += extra or []
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    for k, frame in enumerate(frames):
        if k and pause > 0:
            await asyncio.sleep(pause)
        await send({"type": "http.response.body", "body": frame, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
