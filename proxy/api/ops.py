"""Operations endpoints: ``/healthz`` (alive), ``/readyz`` (ready to serve), ``/metrics``, and
``/`` (a redirect to the viewer at ``/ui``, for whoever opens the proxy's address in a browser).

``/healthz`` and ``/readyz`` are in the OpenAPI document (probes and tests read their shapes);
``/metrics`` speaks Prometheus' text format, not JSON, and stays out of it. ``/metrics`` and the
document itself (``/openapi.json``) follow the admin rule (:mod:`proxy.api.auth`): open on a
loopback bind without a token, the admin token otherwise (they tell upstream names, models,
traffic and every endpoint to whoever asks).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from pydantic import BaseModel

from proxy.api.auth import AdminRoute, require_admin
from proxy.repairlog import RepairLogError

router = APIRouter(tags=["operations"], route_class=AdminRoute)
ADMIN = [Depends(require_admin)]

#: Probes give up after a second or a few: a log that hangs makes the proxy unready, not slow.
PING_TIMEOUT = 2.0


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]


class Unready(BaseModel):
    status: Literal["unavailable"]
    reason: str


UNREADY: dict[int | str, dict[str, Any]] = {
    503: {"model": Unready, "description": "not ready: the reason says why"}
}


@router.get("/", include_in_schema=False)
async def root() -> RedirectResponse:
    """The proxy's address in a browser leads to the viewer."""
    return RedirectResponse("/ui", status_code=307)


@router.get("/healthz", response_model=Health, summary="The process is alive")
async def healthz() -> JSONResponse:
    """The process is up and serving HTTP."""
    return JSONResponse({"status": "ok"})


@router.get("/readyz", response_model=Ready, responses=UNREADY, summary="Ready to serve")
async def readyz(request: Request) -> JSONResponse:
    """The config is loaded and the repair log answers and takes what is queued for it; 503 with
    the reason otherwise (requests are still proxied: only their records wait). The ping never
    runs on the log's writer (SQLite: a connection and thread of its own), and a database
    locked by someone else is reported as such within a moment, not waited on."""
    state = request.app.state
    if getattr(state, "settings", None) is None:
        return _unready("configuration not loaded")
    log = getattr(state, "repair_log", None)
    if log is None:
        return _unready("repair log not open")
    try:
        async with asyncio.timeout(PING_TIMEOUT):
            await log.ping()
    except TimeoutError:
        return _unready(f"repair log did not answer within {PING_TIMEOUT:g} s")
    except RepairLogError as exc:
        return _unready(f"repair log unavailable: {exc}")
    writer = getattr(state, "writer", None)
    if writer is not None and writer.stalled:
        return _unready(
            f"repair log writes failing, {writer.pending} records waiting: {writer.last_error}"
        )
    return JSONResponse({"status": "ready"})


def _unready(reason: str) -> JSONResponse:
    return JSONResponse({"status": "unavailable", "reason": reason}, status_code=503)


@router.get("/openapi.json", include_in_schema=False, dependencies=ADMIN)
async def openapi(request: Request) -> JSONResponse:
    """The OpenAPI document of the ops and admin endpoints."""
    return JSONResponse(request.app.openapi())


@router.get("/metrics", include_in_schema=False, dependencies=ADMIN)
async def metrics() -> Response:
    """Prometheus exposition; every worker's values when ``PROMETHEUS_MULTIPROC_DIR`` is set."""
    registry = REGISTRY
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
