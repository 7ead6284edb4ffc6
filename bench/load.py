"""Load generation: ``wrk`` (C, one thread) for latency and throughput, with a Lua script that
POSTs a body file and prints its figures as JSON; a Python fallback when wrk is missing.

Both report the same :class:`Run` and the CPU time the load generator itself used, so its cost
is visible in the results. ``python -m bench.load URL BODY CONCURRENCY SECONDS HEADERS_JSON``
is the fallback generator (aiohttp, run in its own process).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LUA = r"""
local function read(path)
  local f = assert(io.open(path, "rb"))
  local data = f:read("*a")
  f:close()
  return data
end
local paths = {}
for path in string.gmatch(os.getenv("BENCH_BODY"), "[^,]+") do
  paths[#paths + 1] = path
end
wrk.method = "POST"
wrk.body = read(paths[1])
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer sk-bench"
for name, value in string.gmatch(os.getenv("BENCH_HEADERS") or "", "([^:,]+):([^,]+)") do
  wrk.headers[name] = value
end
if #paths > 1 then
  -- a mix: the bodies in turn, each request prepared once
  local requests, n = {}, 0
  init = function(args)
    for i, path in ipairs(paths) do
      requests[i] = wrk.format(nil, nil, nil, read(path))
    end
  end
  request = function()
    n = n % #requests + 1
    return requests[n]
  end
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
    '"max_us":%d,"mean_us":%.1f,"errors":%d,"non2xx":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean,
    e.connect + e.read + e.write + e.timeout, e.status))
end
"""


@dataclass(frozen=True)
class Run:
    """One load run against one target."""

    requests: int
    seconds: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    errors: int  # socket errors and timeouts
    non2xx: int
    loadgen_cpu_s: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def ensure_wrk() -> str | None:
    """The path of ``wrk``; installed with apt when missing and we are root, else ``None``."""
    found = shutil.which("wrk")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        print("wrk is missing: apt-get install -y wrk", flush=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], check=False)
        found = shutil.which("wrk")
    return found


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _encode_headers(headers: dict[str, str]) -> str:
    return ",".join(f"{k}:{v}" for k, v in headers.items())


class Loader:
    """Runs load against a URL with a body file; wrk when there is one."""

    def __init__(self, workdir: Path, wrk: str | None) -> None:
        self.wrk = wrk
        self.script = workdir / "post.lua"
        self.script.write_text(LUA)

    @property
    def name(self) -> str:
        return "wrk (1 thread)" if self.wrk else "aiohttp (Python fallback, 1 process)"

    def run(
        self,
        url: str,
        body: Path | list[Path],
        concurrency: int,
        seconds: float,
        headers: dict[str, str],
    ) -> Run:
        """Keep ``concurrency`` connections busy with POSTs of ``body`` for ``seconds`` (wrk
        takes whole seconds)."""
        before = _children_cpu()
        paths = ",".join(str(p) for p in (body if isinstance(body, list) else [body]))
        if self.wrk:
            command = [
                self.wrk,
                "-t1",
                f"-c{concurrency}",
                f"-d{max(1, round(seconds))}s",
                "--timeout",
                "10s",
            ]
            command += ["-s", str(self.script), url]
        else:
            command = [sys.executable, "-m", "bench.load", url, paths, str(concurrency)]
            command += [str(seconds), json.dumps(headers)]
        env = {**os.environ, "BENCH_BODY": paths, "BENCH_HEADERS": _encode_headers(headers)}
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
        line = next(x for x in out.splitlines() if x.startswith("BENCH_JSON "))
        data = json.loads(line.removeprefix("BENCH_JSON "))
        return Run(
            requests=data["requests"],
            seconds=data["duration_us"] / 1e6,
            p50_ms=data["p50_us"] / 1000,
            p90_ms=data["p90_us"] / 1000,
            p99_ms=data["p99_us"] / 1000,
            errors=data["errors"],
            non2xx=data["non2xx"],
            loadgen_cpu_s=_children_cpu() - before,
        )


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else 0


async def _fallback(
    url: str, bodies: list[bytes], conc: int, seconds: float, headers: dict[str, str]
) -> dict[str, Any]:
    import aiohttp

    latencies: list[float] = []
    counts = {"errors": 0, "non2xx": 0, "sent": 0}
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench", **headers}
    deadline = time.perf_counter() + seconds

    async def worker(session: aiohttp.ClientSession) -> None:
        while time.perf_counter() < deadline:
            body = bodies[counts["sent"] % len(bodies)]
            counts["sent"] += 1
            start = time.perf_counter()
            try:
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                    counts["non2xx"] += response.status >= 300
            except aiohttp.ClientError:
                counts["errors"] += 1
                continue
            latencies.append(time.perf_counter() - start)

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        began = time.perf_counter()
        await asyncio.gather(*(worker(session) for _ in range(conc)))
        elapsed = time.perf_counter() - began
    us = [x * 1e6 for x in latencies]
    return {
        "requests": len(us),
        "duration_us": int(elapsed * 1e6),
        **{f"p{p}_us": int(_percentile(us, p)) for p in (50, 90, 99)},
        "max_us": int(max(us, default=0)),
        "mean_us": statistics.fmean(us) if us else 0,
        "errors": counts["errors"],
        "non2xx": counts["non2xx"],
    }


if __name__ == "__main__":
    import uvloop

    url, paths, conc, secs, extra = sys.argv[1:6]
    bodies = [Path(p).read_bytes() for p in paths.split(",")]
    result = uvloop.run(_fallback(url, bodies, int(conc), float(secs), json.loads(extra)))
    print("BENCH_JSON " + json.dumps(result))
