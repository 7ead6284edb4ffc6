"""HTTP errors outside ``/v1`` in the OpenAI error shape (issue 16 item 8).

Routing errors of the FastAPI side (an unknown path, a method a route does not take) would
otherwise come as Starlette's ``{"detail": "Not Found"}``; clients of this proxy parse
``{"error": {"message", "type", "param", "code"}}`` everywhere. ``install(app)`` registers the
handler; errors of ``/v1`` and of the admin routes are rendered where they are raised.
"""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException

from proxy.errors import RouteError, render

#: What a client that lost its way is told the proxy serves.
SERVED = "/v1/…, /{upstream}/v1/…, /repairs, /ui, /healthz, /readyz and /metrics"


def route_error(request: Request, exc: HTTPException) -> RouteError:
    """The error a client sees for ``exc`` raised while routing ``request``."""
    where = f"{request.method} {request.url.path}"
    if exc.status_code == HTTPStatus.NOT_FOUND and exc.detail == "Not Found":
        return RouteError(
            f"No route for {where}; this proxy serves {SERVED}.", status=404, code="not_found"
        )
    if exc.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
        headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
        allowed = headers.get("allow", "")
        return RouteError(
            f"{where} is not allowed; allowed methods: {allowed or 'none'}.",
            status=405,
            code="method_not_allowed",
        )
    phrase = _phrase(exc.status_code)
    return RouteError(
        str(exc.detail) or phrase, status=exc.status_code, code=phrase.lower().replace(" ", "_")
    )


async def http_error(request: Request, exc: Exception) -> Response:
    """The app-level handler for Starlette's :class:`HTTPException`."""
    assert isinstance(exc, HTTPException)
    status, headers, body = render(route_error(request, exc))
    extra = [
        (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (exc.headers or {}).items()
    ]
    response = Response(body, status_code=status)
    response.raw_headers = headers + extra  # keeps Allow on a 405
    return response


def install(app: FastAPI) -> None:
    """Answer the app's routing errors in the OpenAI shape."""
    app.add_exception_handler(HTTPException, http_error)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "HTTP error"
