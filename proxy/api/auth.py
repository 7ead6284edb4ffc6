"""Admin authentication for ``/repairs``, the viewer's API calls and any other admin endpoint.

- Admin token set (the env var ``server.admin_token_env`` names, by default
  ``TOOLCALL_GUARD_ADMIN_TOKEN``): requests need ``Authorization: Bearer <token>``, else 401.
- No token and the server listens on loopback only: open (only this machine can ask).
- No token and the server listens beyond loopback: 403, saying how to set one.

The repair log (``/repairs``, its stats, one record, and the viewer reading them) is read by
its owners (:func:`repairs_reader`): with client keys configured (``server.client_keys_env``),
a client key (``Authorization: Bearer <client key>``) reads the records it sent and nothing
else, the admin token reads all, and anyone else is refused (401), on loopback too: a caller
without a key, or another tenant, never reads a tenant's bodies. Without client keys, the admin
rule above holds.

Errors come in the OpenAI shape. Routers using :func:`require_admin` declare
``route_class=AdminRoute``, which renders :class:`~proxy.errors.ProxyError` (auth included) and
invalid parameters (400 naming the parameter, instead of FastAPI's 422) in that shape.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

from proxy.errors import (
    AdminTokenRequired,
    AdminUnauthorized,
    InvalidParameter,
    ProxyError,
    render,
)
from proxy.settings import Settings


async def require_admin(request: Request) -> None:
    """FastAPI dependency guarding an admin endpoint (see the module docstring)."""
    settings: Settings = request.app.state.settings
    token = settings.admin_token()
    if token is None:
        if settings.server.is_loopback():
            return
        env = settings.server.admin_token_env
        raise AdminTokenRequired(
            f"This admin endpoint is reachable beyond loopback ({settings.server.host}) and no "
            f"admin token is set. Set one in the environment variable {env} (named by "
            "server.admin_token_env) and send it as 'Authorization: Bearer <token>'."
        )
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    expected = token.encode()
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), expected):
        raise AdminUnauthorized(
            "This admin endpoint needs 'Authorization: Bearer <admin token>'; the token is "
            f"missing or wrong (it is set in {settings.server.admin_token_env})."
        )


async def repairs_reader(request: Request) -> str | None:
    """FastAPI dependency of the repair log's read routes: ``None`` when the caller reads every
    record, else the owner name (:attr:`~proxy.repairlog.record.Record.owner`) of the client
    key it sent, whose records alone it reads (see the module docstring)."""
    settings: Settings = request.app.state.settings
    clients = _client_keys(request)
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    key = given.strip().encode() if scheme.lower() == "bearer" else None
    token = settings.admin_token()
    if key is not None and token is not None and hmac.compare_digest(key, token.encode()):
        return None
    owner = None if key is None else clients.get(key)
    if owner is not None:
        return owner
    if not clients:
        await require_admin(request)
        return None
    env = settings.server.admin_token_env
    every = (
        f"the admin token ({env}) reads every record"
        if token is not None
        else f"no admin token is set ({env}), so no caller reads every record"
    )
    raise AdminUnauthorized(
        "With client keys configured, the repair log is read with 'Authorization: Bearer "
        f"<client key>' (the records that key sent; {every}); the key is missing or wrong."
    )


def _client_keys(request: Request) -> dict[bytes, str]:
    """The configured client keys and their owner names, as the proxy endpoint read them."""
    proxy = getattr(request.app.state, "proxy", None)
    if proxy is not None:
        keys: dict[bytes, str] = proxy.keyring.client_keys
        return keys
    from proxy.api.learned import client_digests  # learned's routes import this module

    settings: Settings = request.app.state.settings
    return client_digests(settings.client_keys())


Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class AdminRoute(APIRoute):
    """Renders proxy errors and invalid parameters in the OpenAI error shape."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return error_response(_invalid(exc))
            except ProxyError as exc:
                return error_response(exc)

        return route


def error_response(error: ProxyError) -> Response:
    """A proxy error as a Starlette response (rendered by :func:`proxy.errors.render`)."""
    status, headers, body = render(error)
    response = Response(body, status_code=status)
    response.raw_headers = headers
    return response


def _invalid(exc: RequestValidationError) -> InvalidParameter:
    errors = exc.errors()
    first = errors[0] if errors else {}
    loc = tuple(first.get("loc", ()))
    param = str(loc[-1]) if len(loc) > 1 else None
    detail = str(first.get("msg", "invalid value"))
    where = f"{param}: " if param else ""
    return InvalidParameter(f"Invalid parameter {where}{detail}.", param=param)
