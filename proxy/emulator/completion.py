"""Deterministic answers to valid requests: `chat.completion` JSON or `.chunk` SSE frames.

The same request bytes always give the same answer bytes: ids derive from a hash of the body,
``created`` is a fixed timestamp. What is answered:

- the request has usable ``tools``, ``tool_choice`` is not ``"none"`` and the last message is a
  user message: one call to the first tool (or the function ``tool_choice`` names), id
  ``call_<hash>`` (DeepSeek: ``call_00_<hash>``), ``arguments`` ``"{}"``; on ``gemini-3*``
  models the call carries ``extra_content.google.thought_signature`` as Gemini's does;
- the last message is a tool message: a text quoting the trailing tool results;
- otherwise a text echoing the start of the last message.

DeepSeek and Kimi thinking models (`deepseek.thinking_mode`, `kimi.thinking_on`) also return
``reasoning_content``. Tool-call ids follow the provider (Mistral's 9 characters, Kimi's
``functions.<name>:0``) so an answer replays through the same validator.
Streams follow OpenAI's chunk format: a role chunk, the reasoning, the content (or the tool
call's header then its ``arguments``) split into `chunks` pieces (one per word when None), a
final chunk with ``finish_reason``, a usage chunk when ``stream_options.include_usage``, then
``data: [DONE]``.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from proxy.emulator.deepseek import thinking_mode
from proxy.emulator.gemini import is_gemini_3
from proxy.emulator.kimi import thinking_on

CREATED = 1735689600  # fixed so answers are byte-for-byte reproducible
DEFAULT_MODELS = {"openai": "gpt-4o", "deepseek": "deepseek-chat", "gemini": "gemini-2.5-flash"}
DEFAULT_MODELS |= {"kimi": "kimi-k2-0905-preview", "mistral": "mistral-large-latest"}
DEFAULT_MODELS |= {"groq": "llama-3.3-70b-versatile", "xai": "grok-4", "qwen": "qwen-plus"}
DEFAULT_MODELS |= {"vllm": "Qwen/Qwen3-8B", "ollama": "llama3.2"}
DEFAULT_MODELS |= {"anthropic": "claude-sonnet-4-6", "glm": "glm-4.6", "minimax": "MiniMax-M2"}
_REASONING = "Emulated reasoning: the request is valid."


@dataclass(frozen=True, slots=True)
class Answer:
    """What the emulator answers to one valid request."""

    provider: str
    id: str
    model: str
    content: str | None
    reasoning: str | None
    tool_call: dict[str, Any] | None
    prompt_tokens: int
    include_usage: bool

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_call else "stop"

    def usage(self) -> dict[str, int]:
        words = len((self.content or "").split()) + len((self.reasoning or "").split())
        completion = max(words, 1)
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
        }


def plan(provider: str, body: dict[str, Any], raw: bytes) -> Answer:
    """Decide the answer to a request the provider's validator accepted."""
    digest = hashlib.blake2b(raw, digest_size=12).hexdigest()
    model = body.get("model")
    model = model if isinstance(model, str) and model else DEFAULT_MODELS[provider]
    messages = body["messages"]
    tool = _chosen_tool(body) if messages[-1].get("role") == "user" else None
    call = _tool_call(provider, model, tool, digest) if tool else None
    thinking = provider == "deepseek" and thinking_mode(body) != "plain"
    thinking = thinking or (provider == "kimi" and thinking_on(body))
    options = body.get("stream_options")
    return Answer(
        provider=provider,
        id=f"chatcmpl-{digest}",
        model=model,
        # xAI refuses a null content on replay (X4): its own answers must not carry one
        content=("" if provider == "xai" else None) if call else _text(provider, messages),
        reasoning=_REASONING if thinking else None,
        tool_call=call,
        prompt_tokens=max(len(raw) // 4, 1),
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
    )


def completion_json(answer: Answer) -> bytes:
    """The non-streaming ``chat.completion`` body."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.content}
    if answer.provider == "openai":
        message.update(refusal=None, annotations=[])
    if answer.reasoning is not None:
        message["reasoning_content"] = answer.reasoning
    if answer.tool_call is not None:
        message["tool_calls"] = [answer.tool_call]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": answer.finish_reason,
    }
    return orjson.dumps(_envelope(answer, "chat.completion", [choice], usage=answer.usage()))


def stream_frames(answer: Answer, chunks: int | None) -> list[bytes]:
    """The SSE frames of the streaming answer, ``data: [DONE]`` included."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if answer.reasoning is not None:
        deltas += [{"reasoning_content": piece} for piece in split(answer.reasoning, chunks)]
    if answer.tool_call is not None:
        header = {**answer.tool_call, "index": 0}
        header["function"] = {**header["function"], "arguments": ""}
        deltas.append({"tool_calls": [header]})
        arguments = answer.tool_call["function"]["arguments"]
        pieces = split(arguments, chunks) if chunks else [arguments]
        deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in pieces]
    else:
        deltas += [{"content": piece} for piece in split(answer.content or "", chunks)]
    frames = [_chunk(answer, delta, None) for delta in deltas]
    frames.append(_chunk(answer, {}, answer.finish_reason))
    if answer.include_usage:
        usage = _envelope(answer, "chat.completion.chunk", [], usage=answer.usage())
        frames.append(b"data: " + orjson.dumps(usage) + b"\n\n")
    frames.append(b"data: [DONE]\n\n")
    return frames


def split(text: str, pieces: int | None) -> list[str]:
    """`text` in `pieces` consecutive slices (some may be empty), or one per word when None."""
    if pieces is None:
        words = text.split(" ")
        return [word + " " for word in words[:-1]] + [words[-1]]
    size = len(text)
    return [text[k * size // pieces : (k + 1) * size // pieces] for k in range(max(pieces, 1))]


def _chunk(answer: Answer, delta: dict[str, Any], finish: str | None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    return b"data: " + orjson.dumps(_envelope(answer, "chat.completion.chunk", [choice])) + b"\n\n"


def _envelope(
    answer: Answer, kind: str, choices: list[Any], usage: dict[str, int] | None = None
) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "id": answer.id,
        "object": kind,
        "created": CREATED,
        "model": answer.model,
        "choices": choices,
    }
    if answer.provider == "openai":
        envelope.update(service_tier="default", system_fingerprint="fp_emulator")
    if usage is not None:
        envelope["usage"] = usage
    return envelope


def _chosen_tool(body: dict[str, Any]) -> str | None:
    """The function to call: the one `tool_choice` names, else the first declared tool."""
    choice, tools = body.get("tool_choice"), body.get("tools")
    if choice == "none" or not isinstance(tools, list):
        return None
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        named = choice["function"].get("name")
        if isinstance(named, str) and named:
            return named
    names = [_tool_name(tool) for tool in tools]
    return next((name for name in names if name), None)


def _tool_name(tool: Any) -> str | None:
    function = tool.get("function") if isinstance(tool, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) and name else None


def _tool_call(provider: str, model: str, name: str, digest: str) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": _call_id(provider, model, name, digest),
        "type": "function",
        "function": {"name": name, "arguments": "{}"},
    }
    if provider == "gemini" and is_gemini_3(model):
        signature = base64.b64encode(b"emulator-signature:" + digest.encode()).decode()
        call["extra_content"] = {"google": {"thought_signature": signature}}
    return call


def _call_id(provider: str, model: str, name: str, digest: str) -> str:
    """An id in the provider's own format, so the answer replays through its validator."""
    if provider == "mistral" or (provider == "vllm" and "stral" in model.lower()):
        return digest[:9]  # Mistral's 9 alphanumeric characters (provider-rules.md §4)
    if provider == "kimi":
        return f"functions.{name}:0"  # Kimi's own id shape (langchain-ai/langchain PR#37756)
    return ("call_00_" if provider == "deepseek" else "call_") + digest


def _text(provider: str, messages: list[dict[str, Any]]) -> str:
    results = []
    for msg in reversed(messages):
        if msg.get("role") != "tool":
            break
        results.append(_text_of(msg.get("content"))[:200])
    if results:
        return "The tool returned: " + " | ".join(reversed(results))
    return f"Emulated {provider} answer to: {_text_of(messages[-1].get('content'))[:80]}"


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, dict)]
        return " ".join(text for text in texts if isinstance(text, str))
    return ""
