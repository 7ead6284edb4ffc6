"""An example agent for the container examples: it sends a broken tool history through
toolcall-guard and prints what the proxy did. Standard library only, so it runs in a bare
``python:3.11-slim`` without installing anything and without a network beyond the proxy.

The history is the classic lost call: a tool result whose assistant ``tool_calls`` message was
never saved. A provider answers it with a 400; through the proxy it comes back 200, repaired,
with the id of its record in the repair log.

Environment: ``OPENAI_BASE_URL`` (the proxy, ``…/v1``), ``OPENAI_API_KEY`` (the proxy's client
key when it wants one; never a provider key: the proxy holds those), ``AGENT_PROXIES`` (several
proxy URLs, comma-separated, asked in turn: replicas sharing one repair log; default
``OPENAI_BASE_URL``), ``AGENT_MODEL`` (default ``gpt-4o-mini``), ``AGENT_EVERY_SECONDS``
(repeat forever at that interval, for a Deployment; default: once, then exit).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request

HISTORY = [
    {"role": "system", "content": "You are a weather agent."},
    {"role": "user", "content": "Weather in Paris?"},
    # The assistant message that called get_weather (id call_1) was lost on save.
    {"role": "tool", "tool_call_id": "call_1", "content": "18°C, cloudy"},
    {"role": "user", "content": "Should I take an umbrella?"},
]
HEADERS = ("x-toolcall-guard-outcome", "x-toolcall-guard-rules", "x-toolcall-guard-record")


def ask(base_url: str, key: str, model: str) -> int:
    """Send the history once; print the status, the proxy's headers and the reply."""
    body = json.dumps({"model": model, "messages": HISTORY}).encode()
    request = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=body,
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, headers, text = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, text = error.code, error.headers, error.read()
    print(f"HTTP {status} from {base_url}" if len(PROXIES) > 1 else f"HTTP {status}")
    for name in HEADERS:
        if headers.get(name):
            print(f"{name}: {headers[name]}")
    print(text.decode(errors="replace")[:500], flush=True)
    return 0 if status == 200 else 1


BASE_URL = os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8780/v1")
PROXIES = [url.strip() for url in os.environ.get("AGENT_PROXIES", BASE_URL).split(",") if url]


def ask_each(key: str, model: str) -> int:
    """Ask every proxy once; 0 when each answered 200."""
    code = 0
    for base_url in PROXIES:
        try:
            code |= ask(base_url, key, model)
        except OSError as error:  # the proxy not up yet, a reset connection
            print(f"cannot reach {base_url}: {error}", flush=True)
            code = 1
    return code


def main() -> int:
    key = os.environ.get("OPENAI_API_KEY", "injected-by-the-proxy")
    model = os.environ.get("AGENT_MODEL", "gpt-4o-mini")
    every = float(os.environ.get("AGENT_EVERY_SECONDS") or 0)
    while True:
        code = ask_each(key, model)
        if every <= 0:
            return code
        time.sleep(every)


if __name__ == "__main__":
    sys.exit(main())
