"""Rules about the shape of contents and parts: roles, ``Struct`` values, a signature inside
``functionCall``, and fields other APIs left behind."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proxy.core.gemini import index as fast
from proxy.core.gemini.index import index_of
from proxy.core.gemini.items import Contents
from proxy.core.gemini.parts import ROLE_ALIASES, Part, call_of
from proxy.core.gemini.rules.common import edit_parts, facts, parts_to_read, rule
from proxy.core.gemini.spelling import key_in, spelled, without
from proxy.core.rule import Hit, Params


@rule(
    hint="Send role model for the model's turns and role user for prompts and function "
    "responses (not assistant, tool or function), on every content.",
)
def gemini_role(history: Contents, params: Params) -> list[Hit]:
    """A content whose ``role`` the endpoint does not take (``assistant``, ``tool``,
    ``function``, ``system``), or with no role: on Code Assist, or holding function calls
    (read as the user's elsewhere).

    AI Studio and Code Assist answer ``Please use a valid role: user, model.``, newer models
    ``Role 'tool' is not supported``; Code Assist refuses a content without ``role``
    (gemini-native.md N14; the-open-agent/openagent#1666, router-for-me/CLIProxyAPI#17,
    genkit-ai/genkit PR#5780; LangChain's Vertex converter sends ``function``,
    langchain-ai/langchain-google#1059). The ``map`` repair writes ``model`` for ``assistant``
    and ``user`` for ``tool`` and ``function``, and adds the missing role (``model`` on a
    content calling a function, else ``user``); any other role (``system``) cannot be
    mapped: rejected.
    """
    found = facts(params)
    if found.roles is None or (fast.FAST and index_of(history).sent <= found.roles):
        return []
    hits = []
    for i, content in enumerate(history.messages):
        role = content.get("role")
        if role is None:
            if found.role_required or history.roles[i] == "model":
                hits.append(Hit(i, "", "content without a role", history.roles[i]))
        elif role not in found.roles:
            target = ROLE_ALIASES.get(role)
            detail = f"role {role!r} refused by the endpoint"
            hits.append(Hit(i, ".role", detail, target, fatal=target is None))
    return hits


@gemini_role.repair("map")
def _map_roles(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    changes = {h.index: {**history.messages[h.index], "role": h.data} for h in hits if not h.fatal}
    return history.replace(changes)


@rule(
    tools_only=True,
    hint='Send functionResponse.response as a JSON object (the output under "output") and '
    "functionCall.args as an object.",
)
def gemini_struct_value(history: Contents, params: Params) -> list[Hit]:
    """A ``functionResponse.response`` or ``functionCall.args`` that is not a JSON object.

    Both are ``google.protobuf.Struct``: a list, a string or a number is refused (ours:
    ``Invalid value at 'contents[i].parts[j].function_response.response'
    (type.googleapis.com/google.protobuf.Struct)``; gemini-native.md N17,
    google-gemini/deprecated-generative-ai-js#301, G19). The ``wrap`` repair puts a response's
    value under ``output``, the key the SDK documents for a result; the call's ``args`` are
    the model's own output and are not rewritten: rejected.
    """
    if not facts(params).struct_values:
        return []
    hits = []
    for i, j, part in parts_to_read(history):
        for camel, inner, fatal in (
            ("functionCall", "args", True),
            ("functionResponse", "response", False),
        ):
            key = key_in(part, camel)
            fn = part[key] if key is not None else None
            value = fn.get(inner) if type(fn) is dict else None
            if value is not None and type(value) is not dict:
                kind = type(value).__name__
                where = f".parts[{j}].{key}.{inner}"
                hits.append(Hit(i, where, f"{inner} is a {kind}, not an object", (j, key), fatal))
    return hits


@gemini_struct_value.repair("wrap")
def _wrap(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    def wrapped(part: Part, data: tuple[int, str]) -> Part:
        response = part[data[1]]
        return {**part, data[1]: {**response, "response": {"output": response["response"]}}}

    return edit_parts(history, hits, wrapped)


@rule(
    tools_only=True,
    hint="Send thoughtSignature on the part, beside functionCall, not inside it.",
)
def gemini_signature_in_call(history: Contents, params: Params) -> list[Hit]:
    """A ``thoughtSignature`` inside ``functionCall`` instead of on its part.

    The upstream answers ``Invalid JSON payload received. Unknown name "thoughtSignature" at
    'contents[i].parts[0].function_call': Cannot find field`` (gemini-native.md N7;
    farion1231/cc-switch PR#7143). The ``move`` repair moves it up to the part (kept there
    when the part has its own), in the part's spelling.
    """
    if not facts(params).unknown_fields:
        return []
    hits = []
    for i, j, part in parts_to_read(history):
        key = key_in(part, "functionCall")
        call = call_of(part)
        inner = key_in(call, "thoughtSignature") if call is not None else None
        if key is not None and inner is not None:
            hits.append(Hit(i, f".parts[{j}].{key}.{inner}", "signature inside the call", (j, key)))
    return hits


@gemini_signature_in_call.repair("move")
def _move_signature(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    def moved(part: Part, data: tuple[int, str]) -> Part:
        call = part[data[1]]
        out = {**part, data[1]: without(call, "thoughtSignature")}
        if key_in(part, "thoughtSignature") is None:
            out[spelled(part, "thoughtSignature")] = call[key_in(call, "thoughtSignature") or ""]
        return out

    return edit_parts(history, hits, moved)


#: Keys other APIs leave on a part or inside a call or response (N18): a part-level ``id``
#: (kelivo#543) and OpenAI's ``tool_call_id``.
_FOREIGN_PART = ("id", "toolCallId")
_FOREIGN_INNER = ("toolCallId",)


@rule(
    hint="Leave out fields Gemini does not define: no id on a part (it belongs in functionCall "
    "and functionResponse) and no tool_call_id.",
)
def gemini_foreign_field(history: Contents, params: Params) -> list[Hit]:
    """A field another API left in a part: ``id`` on the part itself, or ``tool_call_id``.

    The upstream refuses unknown names: ``Invalid JSON payload received. Unknown name "{k}"
    at '{path}': Cannot find field.`` (gemini-native.md N18; Chevey339/kelivo#543 for a
    part-level ``id``, G14). The ``strip`` repair removes only these known-foreign fields;
    any other field is relayed for the upstream to judge.
    """
    if not facts(params).unknown_fields:
        return []
    hits = []
    for i, j, part in parts_to_read(history):
        for where in _foreign(part):
            hits.append(Hit(i, f".parts[{j}]{where}", "field unknown to Gemini", j))
    return hits


def _foreign(part: Part) -> list[str]:
    found = [f".{k}" for camel in _FOREIGN_PART if (k := key_in(part, camel)) is not None]
    for camel in ("functionCall", "functionResponse"):
        key = key_in(part, camel)
        inner: Any = part[key] if key is not None else None
        if type(inner) is dict:
            found += [f".{key}.{k}" for c in _FOREIGN_INNER if (k := key_in(inner, c)) is not None]
    return found


@gemini_foreign_field.repair("strip")
def _strip_foreign(history: Contents, hits: Sequence[Hit], params: Params) -> Contents:
    def stripped(part: Part, data: int) -> Part:
        out = without(part, *_FOREIGN_PART)
        for camel in ("functionCall", "functionResponse"):
            key = key_in(out, camel)
            if key is not None and type(out[key]) is dict:
                out[key] = without(out[key], *_FOREIGN_INNER)
        return out

    return edit_parts(history, hits, stripped)


RULES = (gemini_role, gemini_struct_value, gemini_signature_in_call, gemini_foreign_field)
