"""The bench's servers, each in its own process: the fake upstream, the floor and toolcall-guard.

``python -m bench.servers KIND PORT [UPSTREAM [REPAIR_LOG_URL [REQUEST_LOG]]]`` serves one of
them on 127.0.0.1 with uvicorn (uvloop, httptools, no access log); toolcall-guard runs with the
options ``toolcall-guard serve`` gives uvicorn and writes its one JSON line per request, as it
ships, to the file REQUEST_LOG (``/dev/null`` by default). :class:`Server` starts such a process,
waits until it accepts connections, reads its memory and CPU from ``/proc`` and stops it.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
KINDS = ("upstream", "floor", "floor-parse", "guard", "otlp-sink")
_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def guard_available() -> bool:
    """Whether toolcall-guard's app factory can be imported (it may still be in the making)."""
    probe = [sys.executable, "-c", "from proxy.app import create_app"]
    return subprocess.run(probe, cwd=ROOT, capture_output=True, check=False).returncode == 0


class Server:
    """One server process on a free loopback port."""

    def __init__(
        self,
        kind: str,
        upstream: str = "",
        logdir: Path | None = None,
        repair_log: str = "memory://",
        root: Path = ROOT,
        *,
        wrapper: tuple[str, ...] = (),
        ready_within: float = 30.0,
        env: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.root = root
        self.repair_log = repair_log
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (logdir or Path("/tmp")) / f"bench-{kind}-{self.port}.log"
        self.requests_log = self.log.with_suffix(".requests.jsonl")
        # ``wrapper``: a program the server runs under (valgrind, for bench/instructions.py).
        command = [*wrapper, sys.executable, "-m", "bench.servers", kind, str(self.port), upstream]
        command += [repair_log, str(self.requests_log)]
        # Run from ``root``: its proxy/ package comes first, the bench's own modules from ROOT.
        # ``env``: extra variables (the traced guard's ``OTEL_*``, bench/tracing.py); no other
        # server traces, whatever the caller's environment says.
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        environ |= {**(env or {}), "PYTHONPATH": str(ROOT)}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command, cwd=root, env=environ, stdout=out, stderr=subprocess.STDOUT
            )
        self._wait_ready(ready_within)

    def log_tail(self, lines: int = 20) -> str:
        """The end of what the server wrote (it writes nothing unless something went wrong)."""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.kind} exited with {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.kind} did not listen on {self.port} within {timeout:g} s")

    def _status(self, field: str) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no {field} for pid {self.process.pid}")

    def rss(self) -> int:
        """Resident memory right now, bytes."""
        return self._status("VmRSS")

    def peak_rss(self) -> int:
        """The highest resident memory since the process started, bytes."""
        return self._status("VmHWM")

    def cpu_seconds(self) -> float:
        """User plus system CPU time the process used so far, in nanoseconds' precision: the
        sum over its threads of ``/proc/<pid>/task/<tid>/schedstat`` (``/proc/<pid>/stat``
        counts 10 ms ticks, too coarse for short runs on a busy machine), ``stat`` if absent."""
        try:
            return (
                sum(
                    int((task / "schedstat").read_text().split()[0])
                    for task in Path(f"/proc/{self.process.pid}/task").iterdir()
                )
                / 1e9
            )
        except (OSError, ValueError, IndexError):
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _TICKS

    def stop(self) -> None:
        """SIGTERM (uvicorn shuts down gracefully), SIGKILL if it hangs."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _app(kind: str, upstream: str) -> Any:
    if kind == "upstream":
        from bench.upstream import app

        return app
    if kind == "otlp-sink":
        from bench.tracing import sink

        return sink()
    from bench.floor import Floor

    return Floor(upstream, parse=kind == "floor-parse")


def _serve_guard(port: int, upstream: str, repair_log: str, requests_log: str) -> None:
    """toolcall-guard as ``toolcall-guard serve`` runs it (same uvicorn options, JSON log lines)."""
    import uvicorn

    from proxy import server
    from proxy.app import create_app
    from proxy.logs import configure_logging
    from proxy.settings import UpstreamSettings, load_settings

    upstreams = {"openai": {"base_url": upstream + "/v1", "models": ["*"], "policy": "openai"}}
    if "anthropic_base_url" in UpstreamSettings.model_fields:  # a baseline may predate it
        base = upstream + "/v1"
        anthropic = {"base_url": base, "anthropic_base_url": upstream + "/anthropic/v1"}
        upstreams = {"anthropic": {**anthropic, "policy": "anthropic"}, **upstreams}
    if "gemini_base_url" in UpstreamSettings.model_fields:  # likewise
        gemini = {"gemini_base_url": upstream + "/gemini", "policy": "gemini"}
        upstreams = {"gemini": gemini, **upstreams}
    settings = load_settings(
        server={"host": "127.0.0.1", "port": port, "log_format": "json"},
        upstreams=upstreams,
        routing={"default": "openai"},
        repair_log={"url": repair_log},
    )
    with open(requests_log, "a", buffering=1 << 16) as lines:
        configure_logging(settings.server, stream=lines)
        options = {**_options(server, settings), "backlog": 4096, "timeout_keep_alive": 60}
        app = create_app(settings)
        _tune_gc()
        uvicorn.run(app, **options)


def _options(server: Any, settings: Any) -> dict[str, Any]:
    """``serve``'s uvicorn options; for a baseline older than ``uvicorn_options``, what
    ``serve`` passed then (uvicorn's proxy headers on, its default)."""
    if hasattr(server, "uvicorn_options"):
        return server.uvicorn_options(settings)  # type: ignore[no-any-return]
    return {
        "host": settings.server.host,
        "port": settings.server.port,
        "loop": "uvloop",
        "http": "httptools",
        "lifespan": "on",
        "log_config": None,
        "access_log": False,
    }


def _tune_gc() -> None:
    """The collector settings ``serve`` uses, in every server of the bench alike (the floor
    too: a fair floor is a tuned one); a baseline older than ``proxy.collector`` gets none."""
    try:
        from proxy.collector import tune_gc
    except ImportError:
        return
    tune_gc()


def main(argv: list[str]) -> None:
    """Serve ``KIND`` on ``PORT`` until SIGTERM."""
    import uvicorn

    kind, port = argv[0], int(argv[1])
    upstream = argv[2] if len(argv) > 2 else ""
    repair_log = argv[3] if len(argv) > 3 else "memory://"
    requests_log = argv[4] if len(argv) > 4 else os.devnull
    # 1,000 open streams take ~2,000 descriptors in a proxy (client side and upstream side).
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if kind == "guard":
        _serve_guard(port, upstream, repair_log, requests_log)
        return
    app = _app(kind, upstream)
    _tune_gc()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        log_level="warning",
        access_log=False,
        backlog=4096,
        timeout_keep_alive=60,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
