"""Run an ASGI app under a real uvicorn server on 127.0.0.1, in a background thread.

    with running(app) as base_url:          # "http://127.0.0.1:<free port>"
        httpx.get(base_url + "/healthz")

The server has its own event loop in its own thread, so synchronous tests (and the sync openai
SDK) can talk to it over a real socket, where streaming behaviour is visible. Start-up waits
for the lifespan to complete (bounded); leaving the block shuts the server down cleanly.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


@contextmanager
def running(app: Any, **config: Any) -> Iterator[str]:
    """Serve ``app`` on a free loopback port for the duration of the block; yield its URL.

    ``config`` goes to :class:`uvicorn.Config` (e.g. ``timeout_graceful_shutdown=1``).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    options: dict[str, Any] = {"log_config": None, "log_level": "warning", "lifespan": "on"}
    server = uvicorn.Server(uvicorn.Config(app, **(options | config)))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        _wait_started(server, thread)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(STOP_TIMEOUT)
        sock.close()
        if thread.is_alive():
            raise RuntimeError(f"uvicorn on port {port} did not stop within {STOP_TIMEOUT} s")


def _wait_started(server: uvicorn.Server, thread: threading.Thread) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("uvicorn exited during start-up (see the lifespan error above)")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"uvicorn did not start within {START_TIMEOUT} s")
        time.sleep(0.005)
