"""Rules one upstream needs and another does not: names on tool messages, echoed extras.

Each rule reads the upstream's record (``params["provider"]``: which models think, which
validate signatures) and the request (``history.request``: its ``model`` and ``thinking``), or
``params["repair"]`` where the repairs pull in opposite directions. Error texts quoted in the
docstrings are the providers' own, from ``provider-rules.md`` (rows G13, D3-D6, G1-G4, §4).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from proxy.core.chat import fast
from proxy.core.chat.messages import History, Message, call_id, function_name, tool_calls_of
from proxy.core.providers import model_matches, model_of, provider_of, switch
from proxy.core.rule import Hit, Params, rule

#: Google's documented dummy signature: "skip_thought_signature_validator" skips validation (G3).
DUMMY_SIGNATURE = "skip_thought_signature_validator"


@rule(
    tools_only=True,
    hint="Send the called function's name as 'name' on tool messages (or none, per upstream).",
    params={"models": []},
)
def tool_message_name(history: History, params: Params) -> list[Hit]:
    """``name`` missing on tool messages where the upstream needs it, or present where refused.

    Gemini's examples send ``name`` on every ``role: "tool"`` message (G13), but a tool
    message without it is accepted (only its cause of a 400 was reported; seed 002 even
    removed it), so no preset adds it: ``add`` is an opt-in repair, for which a tool message
    without a non-empty string ``name`` whose call is known gets that call's function name.
    The groq preset adds it for the models of ``models`` (globs; empty: the record's, Groq's
    ``openai/gpt-oss*``: ``Tools should have a name!``, §4; none listed: every model). With
    ``strip`` configured (the xai preset; xAI: ``Only messages of role 'user' can have a
    name.``, §4), every tool message carrying ``name`` is a hit and loses it.
    """
    index = history.index
    messages = history.messages
    if params.get("repair") == "strip":
        if "name" not in index.keys.get("tool", ()):
            return []
        return [
            Hit(i, ".name", "'name' on a tool message")
            for i in index.tools
            if "name" in messages[i]
        ]
    globs = params.get("models") or provider_of(params).tool_name_models
    if globs and not model_matches(model_of(history.request), globs):
        return []
    if fast.filled(index.tool_messages, "name"):
        return []
    need = [i for i in index.tools if not _named(messages[i])]
    return _name_hits(history, need) if need else []


def _named(message: Message) -> bool:
    name = message.get("name")
    return type(name) is str and name != ""


def _name_hits(history: History, need: list[int]) -> list[Hit]:
    """Hits for the tool messages ``need`` whose call, earlier in the history, has a name."""
    messages = history.messages
    callers = history.index.callers
    names: dict[str, str] = {}
    hits = []
    c = 0
    for i in need:
        while c < len(callers) and callers[c] < i:
            if messages[callers[c]]["role"] == "assistant":
                for call in tool_calls_of(messages[callers[c]]):
                    cid, name = call_id(call), function_name(call)
                    if cid is not None and name is not None:
                        names[cid] = name
            c += 1
        answers = messages[i].get("tool_call_id")
        name = names.get(answers) if type(answers) is str else None
        if name is not None:
            detail = f"tool message without 'name' (its call is to {name!r})"
            hits.append(Hit(i, ".name", detail, data=name))
    return hits


@tool_message_name.repair("add")
def _add_name(history: History, hits: Sequence[Hit], params: Params) -> History:
    return history.replace({h.index: {**history.messages[h.index], "name": h.data} for h in hits})


@tool_message_name.repair("strip")
def _strip_name(history: History, hits: Sequence[Hit], params: Params) -> History:
    return history.replace(
        {h.index: {k: v for k, v in history.messages[h.index].items() if k != "name"} for h in hits}
    )


def _thinking(history: History, params: Params) -> bool:
    """Whether the request runs in thinking mode: the request's switch when it has one, else
    whether its model is one that thinks by default (``models``, else the record's)."""
    provider = provider_of(params)
    on = switch(history.request, provider.thinking_switch)
    if on is not None:
        return on
    globs = params.get("models") or provider.thinking_models
    return model_matches(model_of(history.request), globs)


@rule(
    tools_only=True,
    hint="Pass each tool-call turn's 'reasoning_content' back to the API unchanged (\"\" when it "
    "was not kept).",
    params={"models": []},
)
def missing_reasoning_content(history: History, params: Params) -> list[Hit]:
    """Thinking mode: an assistant tool-call message without ``reasoning_content``.

    DeepSeek V4 answers ``The `reasoning_content` in the thinking mode must be passed back to
    the API.`` (D4; V3.2: ``Missing `reasoning_content` field in the assistant message at message
    index 2.``, D3; doc D5); Kimi ``thinking is enabled but reasoning_content is missing in
    assistant tool call message at index 4`` (§4, B1). Thinking mode: the request's
    ``thinking: {"type": "enabled"}`` (``"disabled"`` turns it off), else a model of ``models``
    (globs; empty: the record's, e.g. ``deepseek-reasoner*``, ``deepseek-v4*``,
    ``kimi-k2-thinking*``). A non-thinking request (``deepseek-chat``) or one without a model
    is left alone. A missing or null field is a hit; the ``add`` repair sets it to ``""``, the
    value clients use when the reasoning is lost (D6, obsidian-yolo PR#243).
    """
    if not fast.lacking(history.index.caller_messages, "reasoning_content"):
        return []
    if not _thinking(history, params):
        return []
    messages = history.messages
    return [
        Hit(i, ".reasoning_content", "assistant tool-call message without 'reasoning_content'")
        for i in history.index.callers
        if messages[i]["role"] == "assistant"
        and messages[i].get("reasoning_content") is None
        and tool_calls_of(messages[i])
    ]


@missing_reasoning_content.repair("add")
def _add_reasoning(history: History, hits: Sequence[Hit], params: Params) -> History:
    return history.replace(
        {h.index: {**history.messages[h.index], "reasoning_content": ""} for h in hits}
    )


@rule(
    tools_only=True,
    hint="Echo each tool call's extra_content.google.thought_signature back as Gemini sent it (a "
    "call Gemini did not make gets Google's 'skip_thought_signature_validator').",
    params={"signature": DUMMY_SIGNATURE, "models": []},
)
def thought_signature(history: History, params: Params) -> list[Hit]:
    """Gemini 3: a step of the current turn whose first call has no thought signature.

    Only requests for a model of ``models`` (globs; empty: the record's, ``gemini-3*``; a
    ``models/`` prefix is ignored) are checked: for Gemini 2.5 the signature is "optional to
    return" (G2).

    Gemini answers ``Function call is missing a thought_signature in functionCall parts. This
    is required for tools to work correctly ...`` (G1). Google's rules (G2): "The first
    functionCall part in each step of the current turn must include its thought_signature";
    the current turn starts at "the most recent User message that contains standard content
    (e.g., text)"; earlier turns are not validated. In the OpenAI-compatible layer the
    signature is ``tool_calls[0].extra_content.google.thought_signature``. The ``add`` repair
    sets it to ``signature``, by default Google's documented dummy
    ``skip_thought_signature_validator`` (G3), keeping any other ``extra_content`` keys.
    """
    callers = history.index.callers
    if not callers:
        return []
    globs = params.get("models") or provider_of(params).signature_models
    if not model_matches(model_of(history.request), globs):
        return []
    messages = history.messages
    hits = []
    for i in callers[bisect_right(callers, _current_turn_start(messages)) :]:
        calls = tool_calls_of(messages[i])
        if messages[i]["role"] != "assistant" or not calls or type(calls[0]) is not dict:
            continue
        if not _signed(calls[0]):
            detail = "first call of a step in the current turn has no thought signature"
            hits.append(Hit(i, ".tool_calls[0].extra_content.google.thought_signature", detail))
    return hits


def _current_turn_start(messages: list[Message]) -> int:
    """Position of the most recent user message with text (-1: none, all is current turn)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "user" and _has_text(messages[i].get("content")):
            return i
    return -1


def _has_text(content: Any) -> bool:
    if type(content) is str:
        return content != ""
    if type(content) is list:
        return any(
            type(p) is dict and p.get("type") == "text" and type(p.get("text")) is str and p["text"]
            for p in content
        )
    return False


def _signed(call: dict[str, Any]) -> bool:
    extra = call.get("extra_content")
    google = extra.get("google") if type(extra) is dict else None
    signature = google.get("thought_signature") if type(google) is dict else None
    return type(signature) is str and signature != ""


@thought_signature.repair("add")
def _add_signature(history: History, hits: Sequence[Hit], params: Params) -> History:
    signature = params.get("signature") or DUMMY_SIGNATURE
    changes = {}
    for hit in hits:
        message = history.messages[hit.index]
        first, *rest = message["tool_calls"]
        extra = first.get("extra_content")
        extra = dict(extra) if type(extra) is dict else {}
        google = extra.get("google")
        extra["google"] = {
            **(google if type(google) is dict else {}),
            "thought_signature": signature,
        }
        changes[hit.index] = {**message, "tool_calls": [{**first, "extra_content": extra}, *rest]}
    return history.replace(changes)


RULES = (tool_message_name, missing_reasoning_content, thought_signature)
