"""``make demo``: an offline tour. A strict DeepSeek emulator, the proxy in front of it, and the
history from seed 000 (an assistant message saved without its ``tool_calls``): refused
directly, accepted through the proxy, and recorded."""

from __future__ import annotations

import tempfile
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


def main() -> int:
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
        print(
            "\nTry it yourself: `make run ARGS=--emulate` serves the proxy in front of the "
            "emulators; browse the records at http://127.0.0.1:8780/ui."
        )
        return 0 if answer.status_code == 200 and record.status_code == 200 else 1


if __name__ == "__main__":
    raise SystemExit(main())
