"""Rules about message roles: legacy ``function`` messages, ``developer``, unknown roles."""

from __future__ import annotations

from collections.abc import Sequence

from proxy.core.chat.messages import KNOWN_ROLES, History, Message, stable_id, tool_calls_of
from proxy.core.providers import model_matches, model_of, provider_of
from proxy.core.rule import Hit, Params, rule


@rule(
    tools_only=True,
    hint="Send tool calls as assistant 'tool_calls' and results as role 'tool' messages.",
)
def legacy_function_role(history: History, params: Params) -> list[Hit]:
    """Legacy function calling: ``role: "function"`` results or an assistant ``function_call``.

    OpenAI o-series and DeepSeek reject the ``function`` role (``does not support 'function'
    with this model``, O21, D14). A ``function_call: null`` (what the openai SDK's stream
    accumulator leaves on every assistant message) is no legacy call and no hit: where an
    upstream refuses the key, ``unknown_message_field`` strips it. The ``convert`` repair turns
    each ``function_call`` into a one-element ``tool_calls`` with a stable id and each
    ``function`` message into a ``tool`` message answering the latest unanswered call of that
    name.
    """
    index = history.index
    if "function" not in index.roles and "function_call" not in index.keys.get("assistant", ()):
        return []
    hits = []
    for i, message in enumerate(history.messages):
        if message["role"] == "function":
            hits.append(Hit(i, ".role", "legacy 'function' role message"))
        elif message["role"] == "assistant" and message.get("function_call") is not None:
            hits.append(Hit(i, ".function_call", "legacy assistant 'function_call'"))
    return hits


@legacy_function_role.repair("convert")
def _convert_legacy(history: History, hits: Sequence[Hit], params: Params) -> History:
    changes: dict[int, Message] = {}
    pending: dict[str, list[str]] = {}  # function name -> ids of calls not answered yet
    for hit in hits:
        message = history.messages[hit.index]
        origin = history.origin(hit.index)
        if message["role"] == "assistant":
            changes[hit.index] = _as_tool_call(message, origin, pending)
        else:
            changes[hit.index] = _as_tool_result(message, origin, pending)
    return history.replace(changes)


def _as_tool_call(message: Message, origin: int | None, pending: dict[str, list[str]]) -> Message:
    out = {k: v for k, v in message.items() if k != "function_call"}
    call = message.get("function_call")
    if type(call) is not dict:
        return out
    name = call.get("name")
    new_id = stable_id("function_call", origin, name)
    pending.setdefault(str(name), []).append(new_id)
    function = {"name": name, "arguments": call.get("arguments", "{}")}
    out["tool_calls"] = [
        *tool_calls_of(out),
        {"id": new_id, "type": "function", "function": function},
    ]
    return out


def _as_tool_result(message: Message, origin: int | None, pending: dict[str, list[str]]) -> Message:
    name = message.get("name")
    waiting = pending.get(str(name))
    call = waiting.pop(0) if waiting else stable_id("function_result", origin, name)
    out = {**message, "role": "tool", "tool_call_id": call}
    return out


@rule("developer_role", hint="Send 'system' instead of 'developer' to this provider.")
def developer_role(history: History, params: Params) -> list[Hit]:
    """``role: "developer"`` sent to a provider that does not know it.

    DeepSeek answers ``unknown variant `developer`, expected one of `system`, `user`,
    `assistant`, `tool``` (D14); DashScope and Volcengine refuse it too (§4). Upstreams whose
    record lists the role (OpenAI, Gemini) find nothing, except for the models its record says
    follow Mistral's templates (``alternation_models`` of a server that otherwise knows the
    role: vLLM), which know only ``system``, ``user``, ``assistant`` and ``tool``
    (``Unexpected role 'user' after role 'developer'``). The ``rename`` repair turns it into
    ``system``.
    """
    if "developer" not in history.index.roles or _knows_developer(history, params):
        return []
    return [
        Hit(i, ".role", "'developer' role is not supported by this upstream")
        for i, message in enumerate(history.messages)
        if message["role"] == "developer"
    ]


def _knows_developer(history: History, params: Params) -> bool:
    provider = provider_of(params)
    if "developer" not in provider.roles:
        return False
    globs = provider.alternation_models
    return not globs or not model_matches(model_of(history.request), globs)


@developer_role.repair("rename")
def _rename_developer(history: History, hits: Sequence[Hit], params: Params) -> History:
    return history.replace({h.index: {**history.messages[h.index], "role": "system"} for h in hits})


@rule(
    hint="Use one of the roles system, developer, user, assistant, tool.",
)
def unknown_role(history: History, params: Params) -> list[Hit]:
    """A role neither a provider's chat API nor this upstream knows (``model``, ``human``…).

    Always rejected, never guessed. Roles the upstream's record lists pass (DeepSeek's
    ``latest_reminder``, D14).
    """
    known = KNOWN_ROLES | provider_of(params).roles
    if history.index.roles <= known:
        return []
    return [
        Hit(i, ".role", f"unknown role {message['role']!r}")
        for i, message in enumerate(history.messages)
        if message["role"] not in known
    ]


RULES = (legacy_function_role, developer_role, unknown_role)
