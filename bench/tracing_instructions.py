"""Instructions per request that tracing adds, in process, under callgrind (issue 36's cost line
without the noise of CPU time on a shared machine).

One process builds the app as ``bench.servers`` serves it (JSON log lines, the collector tuned),
with tracing on (the real :class:`~proxy.telemetry.otel.Tracing`: the OTLP/HTTP span exporter
and the GenAI histograms, only the exporter's HTTP send stubbed) or off, drives ``--requests``
chat requests through its ASGI callable one after the other, the upstream's send stubbed with
the fake upstream's answer, then flushes the batch processor (its thread's export is counted).
Callgrind dumps its counters (all threads) at each ``os.getppid()`` call: once after a warm-up,
once after the counted requests.

``python -m bench.tracing_instructions`` runs itself under valgrind for each body and
on / off, and prints instructions per request; ``--tree DIR`` counts another tree's ``proxy``
(an older one: ``git archive main proxy | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from bench.bodies import body

BODIES = ("small", "history")


class _Answer:
    """The fake upstream's chat completion, as the relay hands it over."""

    def __init__(self, payload: bytes) -> None:
        self.status = 200
        length = str(len(payload)).encode()
        self.headers = [(b"content-type", b"application/json"), (b"content-length", length)]
        self.payload = payload

    @property
    def body(self) -> Any:
        return self._chunks()

    async def _chunks(self) -> Any:
        yield self.payload

    async def aclose(self) -> None:
        return


class _Ok:
    ok, status_code = True, 200


def _app(traced: bool) -> tuple[Any, Any]:
    from bench.upstream import COMPLETION
    from proxy.app import create_app
    from proxy.logs import configure_logging
    from proxy.settings import load_settings

    upstreams = {"openai": {"base_url": "http://127.0.0.1:9/v1", "models": ["*"]}}
    settings = load_settings(
        server={"host": "127.0.0.1", "port": 8080, "log_format": "json"},
        upstreams=upstreams,
        routing={"default": "openai"},
        repair_log={"url": "memory://"},
    )
    configure_logging(settings.server, stream=open(os.devnull, "w"))  # noqa: SIM115
    tracing = None
    if traced:
        from opentelemetry.sdk.metrics.export import MetricExportResult

        from proxy.telemetry.otel import Tracing
        from proxy.telemetry.otlp import span_exporter

        class Metrics:
            def __init__(self) -> None:
                self._preferred_temporality: dict[Any, Any] = {}
                self._preferred_aggregation: dict[Any, Any] = {}

            def export(self, *args: Any, **kwargs: Any) -> Any:
                return MetricExportResult.SUCCESS

            def shutdown(self, *args: Any, **kwargs: Any) -> None:
                return

        spans = span_exporter()
        spans._export = lambda data, timeout: _Ok()  # type: ignore[attr-defined]
        tracing = Tracing(settings, spans, Metrics(), {})  # type: ignore[arg-type]

    answer = _Answer(COMPLETION)

    async def send(*args: Any) -> _Answer:
        return answer

    return create_app(settings, tracing=tracing), send


async def _drive(app: Any, stub: Any, payload: bytes, count: int, warm: int) -> None:
    queue: asyncio.Queue[Any] = asyncio.Queue()

    async def receive() -> Any:
        return await queue.get()

    started = asyncio.Event()

    async def send(message: Any) -> None:
        started.set()

    lifespan_scope = {"type": "lifespan", "asgi": {"version": "3.0"}}
    lifespan = asyncio.ensure_future(app(lifespan_scope, receive, send))
    await queue.put({"type": "lifespan.startup"})
    await started.wait()
    app.state.relay.send = stub  # the proxy holds the same relay
    headers = [
        (b"host", b"127.0.0.1:8080"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"authorization", b"Bearer sk-bench"),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
        "state": {},
    }

    async def one() -> None:
        messages = [{"type": "http.request", "body": payload, "more_body": False}]

        async def receive_one() -> Any:
            if messages:
                return messages.pop()
            await asyncio.sleep(3600)

        out: list[Any] = []

        async def send_one(message: Any) -> None:
            out.append(message)

        await app(dict(scope), receive_one, send_one)
        assert out[0]["status"] == 200, out

    proxy = app.state.proxy
    for _ in range(warm):
        await one()
    _flush(proxy)
    os.getppid()  # callgrind dumps here: start-up and warm-up
    for _ in range(count):
        await one()
    _flush(proxy)
    os.getppid()  # and here: the counted requests
    await queue.put({"type": "lifespan.shutdown"})
    await lifespan


def _flush(proxy: Any) -> None:
    if proxy.tracing is not None:
        proxy.tracing.force_flush()


def child(kind: str, traced: bool, count: int, warm: int) -> None:
    import uvloop

    from proxy.collector import tune_gc

    app, stub = _app(traced)
    tune_gc()
    # A collection's cost falls on whichever request allocates past the threshold: lumps of
    # millions of instructions that move with any change. Off, the counts are the code's.
    gc.disable()
    uvloop.run(_drive(app, stub, body(kind, stream=False), count, warm))


def measure(tree: Path, kind: str, traced: bool, count: int, warm: int) -> int:
    """Instructions of ``count`` requests (all threads), under callgrind."""
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="trace-cg-") as tmp:
        out = Path(tmp) / "cg.out"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
            "PYTHONPATH": f"{tree}:{here}",
            "PYTHONHASHSEED": "0",
        }
        command = [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=os_getppid",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "bench.tracing_instructions",
            "--child",
            kind,
            "on" if traced else "off",
            str(count),
            str(warm),
        ]
        subprocess.run(command, env=env, check=True, capture_output=True, cwd=tmp)
        dumps = sorted(Path(tmp).glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
        return _total(dumps[1])


def _total(path: Path) -> int:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise ValueError(f"no totals in {path}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.tracing_instructions")
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--warm", type=int, default=50)
    parser.add_argument("--bodies", nargs="*", default=list(BODIES))
    parser.add_argument("--child", nargs=4)
    args = parser.parse_args()
    if args.child:
        kind, on, count, warm = args.child
        child(kind, on == "on", int(count), int(warm))
        return
    for kind in args.bodies:
        off = measure(args.tree, kind, False, args.requests, args.warm) / args.requests
        on = measure(args.tree, kind, True, args.requests, args.warm) / args.requests
        line = {"body": kind, "off": round(off), "on": round(on), "added": round(on - off)}
        line["ratio"] = round(on / off, 3)
        print(orjson.dumps(line).decode(), flush=True)


if __name__ == "__main__":
    main()
