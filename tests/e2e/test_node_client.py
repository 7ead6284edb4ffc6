"""Another ecosystem: the official ``openai`` npm package under Node, streaming a tool-call
round trip through the proxy to the strict DeepSeek emulator.

The package is installed once into tests/.node/ (git-ignored) from the npm registry. Without
Node, or when npm cannot install it (no registry), the test is skipped with the reason, except
under CI=true, where it must run.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.e2e.conftest import Proxy, Upstream
from tests.node import node_with

NODE_DIR = Path(__file__).parent.parent / ".node"
SCRIPT = r"""
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.PROXY_V1, apiKey: "sk-node-test" });
const tools = [{ type: "function", function: { name: "read_file", parameters: { type: "object",
  properties: { path: { type: "string" } } } } }];
// The agent's saved history lost the assistant's tool_calls (seed 000): DeepSeek refuses it.
const messages = [
  { role: "user", content: "Read config.py" },
  { role: "assistant", content: "" },
  { role: "tool", tool_call_id: "call_lost", content: "port = 8080" },
  { role: "user", content: "Now read app.py" },
];
const first = await client.chat.completions.create({ model: "deepseek-chat", messages, tools,
  stream: true });
const calls = {};
let chunks = 0;
for await (const chunk of first) {
  chunks++;
  for (const delta of chunk.choices[0]?.delta?.tool_calls ?? []) {
    calls[delta.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } };
    if (delta.id) calls[delta.index].id = delta.id;
    if (delta.function?.name) calls[delta.index].function.name += delta.function.name;
    const fn = delta.function ?? {};
    if (fn.arguments) calls[delta.index].function.arguments += fn.arguments;
  }
}
const toolCalls = Object.values(calls);
messages.push({ role: "assistant", content: "", tool_calls: toolCalls });
for (const call of toolCalls) messages.push({ role: "tool", tool_call_id: call.id, content: "ok" });
const second = await client.chat.completions.create({ model: "deepseek-chat", messages, tools,
  stream: true });
let text = "";
for await (const chunk of second) text += chunk.choices[0]?.delta?.content ?? "";
console.log(JSON.stringify({ chunks, toolCalls, text }));
"""


def _node() -> str:
    installed = NODE_DIR / "node_modules" / "openai"
    return node_with(NODE_DIR, ("openai@^4",), installed, what="the Node client test")


def test_node_sdk_streams_a_tool_call_round_trip(
    start_proxy: Callable[..., Proxy], upstreams: dict[str, Upstream]
) -> None:
    node = _node()
    proxy = start_proxy({"deepseek": upstreams["deepseek"].url}, routing={"default": "deepseek"})
    script = NODE_DIR / "round_trip.mjs"
    script.write_text(SCRIPT)
    result = subprocess.run(
        [node, str(script)],
        env={**os.environ, "PROXY_V1": proxy.v1},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["chunks"] > 1, "the tool call must arrive as a stream of chunks"
    assert [c["function"]["name"] for c in out["toolCalls"]] == ["read_file"]
    assert out["text"], "the second turn, answering the tool result, must produce text"
    chats = upstreams["deepseek"].chats()
    assert len(chats) == 2
    first = json.loads(chats[0].body)
    assert all(m["role"] != "tool" or m["tool_call_id"] != "call_lost" for m in first["messages"])
    assert chats[0].headers["authorization"] == "Bearer sk-node-test"
