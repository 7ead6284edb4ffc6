"""``toolcall-guard serve``: the proxy under uvicorn (uvloop, httptools).

With ``--workers N`` uvicorn starts N processes that each build the app from an import string,
so the settings travel through the environment: the config path in ``TOOLCALL_GUARD_CONFIG``
and ``--host``/``--port`` as ``TOOLCALL_GUARD_SERVER__HOST``/``__PORT``, which every worker's
:func:`load_settings` reads like any other override. Prometheus then needs a shared directory
(``PROMETHEUS_MULTIPROC_DIR``); a fresh temporary one is made when none is set.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from typing import Any

import uvicorn
from fastapi import FastAPI

from proxy.app import create_app
from proxy.collector import tune_gc
from proxy.connection import guarded_protocol
from proxy.errors import ConfigError
from proxy.exposure import check_open_relay
from proxy.logs import configure_logging
from proxy.repairlog import open_repair_log
from proxy.settings import ServerSettings, Settings, config_path, load_settings
from proxy.startup import announce_start

EXIT_CONFIG = 2
#: Open streams get this long to finish on shutdown; then they are cut and the repair log's
#: queue is drained (container runtimes kill after ~10 s).
GRACEFUL_SHUTDOWN_SECONDS = 5


def app_factory() -> FastAPI:
    """Build the app from the environment (the import string each worker runs)."""
    settings = load_settings()
    check_open_relay(settings)  # serve checked already; this guards a direct uvicorn --factory
    configure_logging(settings.server)
    app = create_app(settings)
    tune_gc()
    return app


def serve(
    *,
    config: str | None = None,
    host: str | None = None,
    port: int | None = None,
    workers: int = 1,
) -> int:
    """Run the proxy until interrupted; the process exit status."""
    path = config_path(config)
    if path is not None:
        os.environ["TOOLCALL_GUARD_CONFIG"] = str(path.resolve())
    if host is not None:
        os.environ["TOOLCALL_GUARD_SERVER__HOST"] = host
    if port is not None:
        os.environ["TOOLCALL_GUARD_SERVER__PORT"] = str(port)
    try:
        settings = load_settings()
        open_repair_log(settings.repair_log.url)  # checks the URL (it opens nothing yet)
        open_relay = check_open_relay(settings)
    except ConfigError as exc:
        print(f"toolcall-guard: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    configure_logging(settings.server)
    announce_start(settings)
    if open_relay is not None:
        logging.getLogger("toolcall_guard").warning("starting as an %s", open_relay)
    if workers == 1:
        return _run(create_app(settings), settings, workers=1, factory=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return _run("proxy.server:app_factory", settings, workers=workers, factory=True)
    with tempfile.TemporaryDirectory(prefix="toolcall-guard-metrics-") as shared:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = shared
        return _run("proxy.server:app_factory", settings, workers=workers, factory=True)


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """How uvicorn runs the proxy (``serve`` and the benchmark use the same options).

    uvicorn's proxy-headers middleware (on by default, trusting 127.0.0.1) sits on every
    request; it is on here only when ``server.forwarded_allow_ips`` names the proxies to trust.
    """
    trusted = settings.server.forwarded_allow_ips.strip()
    return connection_options(settings.server) | {
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted or None,
        "host": settings.server.host,
        "port": settings.server.port,
        "loop": "uvloop",
        "lifespan": "on",
        "log_config": None,
        "access_log": False,  # one JSON line per request comes from proxy.logs instead
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
    }


def connection_options(server: ServerSettings) -> dict[str, Any]:
    """uvicorn's options bounding connections before a request reaches the app: the head
    (:mod:`proxy.connection`), the idle time between requests, the connections served at once.
    """
    return {
        "http": guarded_protocol(server),
        "timeout_keep_alive": server.keep_alive_timeout,
        # uvicorn answers 503 once the open connections (the new one counted) reach the limit.
        "limit_concurrency": server.max_connections + 1,
    }


def _run(app: object, settings: Settings, *, workers: int, factory: bool) -> int:
    if not factory:
        tune_gc()  # each worker does it in app_factory
    try:
        uvicorn.run(
            app,  # type: ignore[arg-type]
            workers=workers,
            factory=factory,
            **uvicorn_options(settings),
        )
    except SystemExit as exc:  # uvicorn exits this way when start-up fails
        return exc.code if isinstance(exc.code, int) else 1
    return 0
