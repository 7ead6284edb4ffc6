"""Deterministic answers to valid ``/v1/messages`` requests: a Message, or its SSE events.

The same request bytes give the same answer bytes (ids derive from a hash of the body). What is
answered, in this order:

1. Scripted tool loops: the last user message that carries no ``tool_result`` (the one that
   asks) may hold directives ``[[tool_use NAME {json input}]]``; the emulator answers the k-th
   directive as a ``tool_use`` when k assistant tool turns already follow that message, and a
   text once they are used up; directives joined by ``&`` (``[[tool_use A {…}]] &
   [[tool_use B {…}]]``) are one round of parallel calls. Tests drive multi-turn loops this way
   (Claude Code included).
2. Otherwise, when ``tool_choice`` forces a call (``any``, or ``tool`` and its ``name``) and the
   last message asks (no ``tool_result``): one call to the tool named, else the first, its
   required properties filled with placeholders (ours). Under ``auto`` no tool is called
   unscripted: an agent such as Claude Code, pointed at the emulator without directives, gets a
   text rather than a call of its first tool (its ``Agent`` tool, which would recurse).
3. Otherwise a text: quoting the trailing tool results, or echoing the start of the question
   (the last user text that is not a ``<system-reminder>``: Claude Code injects those).

A thinking block (signed; DeepSeek's signature is ``""`` as DeepSeek returns it) opens the
answer when the provider thinks for this request. Tool-use ids are ``toolu_01…`` (Kimi:
``functions.<name>:<n>``, its own shape, langchain_anthropic's id middleware). The answer's
wire form (the Message, its SSE events) is :mod:`proxy.emulator.messages_events`; the text it
quotes, :mod:`proxy.emulator.messages_prompt`.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from proxy.emulator.messages_content import thinking_type
from proxy.emulator.messages_prompt import answer_text, text_of, tool_results
from proxy.emulator.messages_validate import deepseek_thinks, kimi_thinks
from proxy.emulator.scripts import Call, placeholders, rounds

DIRECTIVE = re.compile(r"\[\[tool_use (\S+) (\{.*?\})\]\]", re.DOTALL)
REASONING = "Emulated reasoning: the request is valid."


@dataclass(frozen=True, slots=True)
class Reply:
    """What the emulator answers to one valid request."""

    id: str
    model: str
    blocks: list[dict[str, Any]]
    input_tokens: int

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.blocks[-1]["type"] == "tool_use" else "end_turn"

    @property
    def output_tokens(self) -> int:
        words = sum(
            len(str(b.get("text") or b.get("thinking") or b.get("input"))) for b in self.blocks
        )
        return max(words // 4, 1)


def thinks(provider: str, body: dict[str, Any]) -> bool:
    """Whether the provider thinks for this request."""
    if provider == "deepseek":
        return deepseek_thinks(body)
    if provider == "kimi":
        return kimi_thinks(body)
    allowed = ("enabled", "adaptive") if provider == "anthropic" else ("enabled",)
    return thinking_type(body) in allowed


def plan_message(provider: str, body: dict[str, Any], raw: bytes) -> Reply:
    """The answer to a request the provider's validator accepted."""
    digest = hashlib.blake2b(raw, digest_size=12).hexdigest()
    blocks: list[dict[str, Any]] = []
    if thinks(provider, body):
        signature = "" if provider == "deepseek" else _signature(digest)
        blocks.append({"type": "thinking", "thinking": REASONING, "signature": signature})
    calls = _scripted(body) or _default_call(body)
    for k, (name, arguments) in enumerate(calls):
        blocks.append({"type": "tool_use", "id": _tool_id(provider, name, body, digest, k),
                       "name": name, "input": arguments})  # fmt: skip
    if not calls:
        blocks.append({"type": "text", "text": answer_text(provider, body["messages"])})
    return Reply(f"msg_01{digest}", str(body["model"]), blocks, max(len(raw) // 4, 1))


def _signature(digest: str) -> str:
    return base64.b64encode(b"emulator-thinking-signature:" + digest.encode()).decode()


def _asking(messages: list[dict[str, Any]]) -> int | None:
    """The index of the last user message without tool results."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") == "user" and not tool_results(message):
            return i
    return None


def _scripted(body: dict[str, Any]) -> list[Call]:
    """The calls of the next scripted round (none when unscripted or the script is done)."""
    messages = body["messages"]
    asking = _asking(messages)
    if asking is None:
        return []
    steps = rounds(text_of(messages[asking].get("content")), DIRECTIVE)
    done = sum(1 for m in messages[asking + 1 :] if m.get("role") == "assistant" and _calls(m))
    return steps[done] if done < len(steps) else []


def _calls(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_use" for b in content
    )


def _default_call(body: dict[str, Any]) -> list[Call]:
    messages, tools, choice = body["messages"], body.get("tools"), body.get("tool_choice")
    choice = choice if isinstance(choice, dict) else {}
    if not isinstance(tools, list) or choice.get("type") not in ("any", "tool"):
        return []
    if messages[-1].get("role") != "user" or tool_results(messages[-1]):
        return []
    if DIRECTIVE.search(text_of(messages[-1].get("content"))):
        return []  # a script that is done answers text
    usable = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    named = [t for t in usable if t["name"] == choice.get("name")]
    if not usable:
        return []
    tool = (named or usable)[0]
    return [(tool["name"], placeholders(tool.get("input_schema")))]


def _tool_id(provider: str, name: str, body: dict[str, Any], digest: str, k: int) -> str:
    """The id of the answer's `k`-th call."""
    if provider == "kimi":  # Kimi's ids count the calls of the conversation (Kimi-K2 issues)
        count = sum(
            1
            for m in body["messages"]
            for b in (m.get("content") if isinstance(m.get("content"), list) else [])
            if isinstance(b, dict) and b.get("type") == "tool_use"
        )
        return f"functions.{name}:{count + k}"
    return f"toolu_01{digest}" + (f"_{k}" if k else "")
