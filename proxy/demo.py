"""``make demo``: an offline tour. A strict DeepSeek emulator, the proxy in front of it, and the
history from seed 000 (an assistant message saved without its ``tool_calls``): refused
directly, accepted through the proxy, and recorded.

The tour runs on free ports of its own. Its closing line points at the proxy ``make run``
serves: the port ``serve`` would use (``--port``, else the config's and the environment's, as
``serve`` reads them), so ``make demo ARGS='--emulate --port 28780'`` says 28780. ``serve``'s
other flags are accepted and ignored."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import httpx
import orjson

from proxy.app import create_app
from proxy.emulator import create_emulator_app
from proxy.quickstart import serve_in_thread
from proxy.settings import load_settings

HISTORY = {
    "model": "deepseek-chat",
    "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Read config.py"},
        {"role": "assistant", "content": ""},  # the agent saved it without its tool_calls
        {"role": "tool", "tool_call_id": "call_1", "content": "port = 8080"},
        {"role": "user", "content": "Which port does it use?"},
    ],
}


def _show(title: str, response: httpx.Response) -> None:
    print(f"\n== {title}: HTTP {response.status_code}")
    for name in ("x-toolcall-guard-outcome", "x-toolcall-guard-rules", "x-toolcall-guard-record"):
        if name in response.headers:
            print(f"   {name}: {response.headers[name]}")
    print("   " + response.text[:400].replace("\n", "\n   "))


def served_base(argv: Sequence[str]) -> str:
    """The base URL ``serve`` would listen on with these flags (its other flags ignored)."""
    parser = argparse.ArgumentParser(prog="make demo", add_help=False)
    parser.add_argument("--config")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    flags, _ = parser.parse_known_args(argv)
    server = load_settings(flags.config).server
    host = flags.host or server.host
    if host in ("0.0.0.0", "::"):  # every interface: this machine reaches it on loopback
        host = "127.0.0.1"
    return f"http://{host}:{flags.port or server.port}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with ExitStack() as stack:
        upstream = stack.enter_context(serve_in_thread(create_emulator_app("deepseek")))
        data = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        settings = load_settings(
            upstreams={"deepseek": {"base_url": upstream + "/v1", "models": ["deepseek-*"]}},
            routing={"default": "deepseek"},
            repair_log={"url": f"sqlite:///{data}/repairs.sqlite3", "flush_interval": 0.05},
        )
        proxy = stack.enter_context(serve_in_thread(create_app(settings)))
        client = stack.enter_context(httpx.Client(timeout=10))
        print("A history whose assistant message lost its tool_calls (seed 000):")
        print(orjson.dumps(HISTORY["messages"], option=orjson.OPT_INDENT_2).decode())
        _show(
            "Sent directly to the strict DeepSeek emulator",
            client.post(upstream + "/v1/chat/completions", json=HISTORY),
        )
        answer = client.post(proxy + "/v1/chat/completions", json=HISTORY)
        _show("Sent through toolcall-guard", answer)
        record_id = answer.headers.get("x-toolcall-guard-record")
        record = client.get(f"{proxy}/repairs/{record_id}")  # readable before it is written
        print(f"\n== The record (GET /repairs/{record_id}): HTTP {record.status_code}")
        stored = record.json()
        for f in stored.get("findings", []):
            print(f"   {f['path']}  {f['rule']}  [{f['action']}]  {f['detail']}")
        print("   forwarded messages:")
        for message in stored["forwarded"]["messages"]:
            print("     " + orjson.dumps(message).decode()[:150])
        base = served_base(argv)
        port = base.rsplit(":", 1)[1]
        flags = "--emulate" if port == "8780" else f"'--emulate --port {port}'"
        print(
            f"\nTry it yourself: `make run ARGS={flags}` serves the proxy in front of the "
            f"emulators; browse the records at {base}/ui."
        )
        return 0 if answer.status_code == 200 and record.status_code == 200 else 1


if __name__ == "__main__":
    raise SystemExit(main())
