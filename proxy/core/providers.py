"""What each upstream dialect accepts, as data: one frozen :class:`Provider` record per dialect.

Rules read the record of their policy's provider (``params["provider"]``) and never test a
provider's name; the presets in :mod:`proxy.core.policy` say what each rule *does* (repair,
warn, off) on each provider. Adding a provider = adding a row here, a preset column there, and
its emulator. Every field cites its evidence row (``provider-rules.md`` §1-§4, rows O*, D*, G*;
``providers-second-tier.md`` B1); where no evidence exists the field says what the provider is
assumed to accept, and the default is to leave the history alone (precision first).

Message *kinds* used by the content fields: ``caller`` (an assistant message making tool calls:
a non-empty ``tool_calls`` or a non-null ``function_call``), and the roles ``system``,
``developer``, ``user``, ``assistant`` (a plain one), ``tool``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from functools import lru_cache
from types import MappingProxyType
from typing import Any

Fields = Mapping[str, frozenset[str]]

CALLER = frozenset({"caller"})
BASE_ROLES = frozenset({"system", "user", "assistant", "tool"})
#: Model globs of the Mistral family, whose chat templates check ids and role order wherever
#: they are served (providers-second-tier.md B1: mlx-lm, omlx, Ollama; vLLM Mistral Vibe#578).
_MISTRALS = ("mistral", "mixtral", "devstral", "codestral", "magistral", "ministral")
MISTRAL_FAMILY = tuple(f"*{name}*" for name in _MISTRALS)


@dataclass(frozen=True, slots=True, eq=False)  # one record per dialect: identity is equality
class Provider:
    """What one upstream dialect accepts in a chat-completions ``messages`` array."""

    name: str
    #: Roles it knows (``developer_role`` renames ``developer`` where it is missing).
    roles: frozenset[str] = BASE_ROLES
    #: Arrays of content parts accepted at all (DeepSeek D9/D10: strings only).
    content_parts: bool = True
    #: A tool message's content must be a string (DeepSeek D9; Gemini seed 002).
    tool_text_only: bool = False
    #: Kinds of message that may carry ``content: null`` (OpenAI O14: tool-call turns only).
    null_content: frozenset[str] = CALLER
    #: Kinds of message that may leave ``content`` out (DeepSeek D11: none).
    missing_content: frozenset[str] = CALLER
    #: Longest tool-call id accepted (0: no limit known; OpenAI O10: 40).
    id_max_length: int = 0
    #: Regular expression every tool-call id must match in full ("" : any).
    id_pattern: str = ""
    #: Model globs the id format applies to (empty: every model).
    id_models: tuple[str, ...] = ()
    #: ``name`` on tool messages: ``refused``, ``accepted``, ``expected`` (sent by the
    #: provider's own examples: messages the proxy writes carry it) or ``required``.
    tool_name: str = "accepted"
    #: Globs of the models that require ``name`` on tool messages (``tool_message_name``'s
    #: ``add`` checks only those; none listed: every model).
    tool_name_models: tuple[str, ...] = ()
    #: Message keys accepted per role; None: unknown keys are ignored (serde, Go, vLLM).
    message_fields: Fields | None = None
    #: Keys refused per role by a provider that otherwise ignores unknown keys.
    refused_fields: Fields = field(default_factory=dict)
    #: Keys of one ``tool_calls`` entry; None: unknown keys ignored (a stray ``index`` passes).
    call_fields: frozenset[str] | None = None
    #: Content-part keys checked (OpenAI O13) only where this is true.
    strict_parts: bool = False
    #: Globs of the models that think by default (``reasoning_content`` on tool-call turns).
    thinking_models: tuple[str, ...] = ()
    #: The request field ``{"type": "enabled" | "disabled"}`` that turns thinking on or off.
    thinking_switch: str = ""
    #: Globs of the models that validate thought signatures (Gemini G1/G2).
    signature_models: tuple[str, ...] = ()
    #: Most tool calls in one assistant message (0: no limit known).
    max_calls: int = 0
    #: Whether one tool-call turn may be split into several (Gemini G4: never).
    split_calls: bool = True
    #: Globs of the models that want an assistant turn between tool results and a user or system
    #: message (Mistral's ``Unexpected role 'user' after role 'tool'``; none listed: every model).
    alternation_models: tuple[str, ...] = ()
    #: Roles whose message may not be empty (missing, null, ``""`` or ``[]`` content): Kimi's
    #: ``the message at position 0 with role 'system' must not be empty`` (issue 22).
    empty_refused: frozenset[str] = frozenset()
    #: Whether ``content: []`` is accepted (xAI §4: ``Each message must have at least one
    #: content element.``).
    empty_parts: bool = True
    #: Whether a ``tool_choice`` needs ``tools`` in the same request (xAI B1: ``A tool_choice
    #: was set on the request but no tools were specified.``).
    tool_choice_needs_tools: bool = False

    def takes(self, role: str, key: str) -> bool:
        """Whether a message of ``role`` may carry ``key`` (a role it does not list: yes)."""
        if self.message_fields is None:
            return key not in self.refused_fields.get(role, ())
        fields = self.message_fields.get(role)
        return fields is None or key in fields

    def new_call_content(self) -> tuple[bool, str | None]:
        """``(keep the key, value)`` for the content of a tool-call turn the proxy writes."""
        if "caller" in self.null_content:
            return True, None
        if "caller" in self.missing_content:
            return False, None
        return True, ""


def _frozen(table: Mapping[str, Iterable[str]]) -> Fields:
    return MappingProxyType({role: frozenset(keys) for role, keys in table.items()})


_PLAIN = ("role", "content", "name")
_OPENAI_ASSISTANT = (
    *_PLAIN,
    *("tool_calls", "function_call", "refusal", "audio", "annotations"),
)
_CALL = frozenset({"id", "type", "function"})

#: OpenAI's schema (O12, O22: unknown keys refused; O13 in parts; the SDK's message types).
OPENAI = Provider(
    name="openai",
    roles=BASE_ROLES | {"developer", "function"},
    id_max_length=40,  # O10
    message_fields=_frozen(
        {
            "system": _PLAIN,
            "developer": _PLAIN,
            "user": _PLAIN,
            "assistant": _OPENAI_ASSISTANT,
            "tool": ("role", "content", "tool_call_id", "name"),  # O17: name not seen refused
            "function": _PLAIN,
        }
    ),
    call_fields=_CALL,
    strict_parts=True,
    max_calls=128,  # O8
)
#: DeepSeek: serde structs (unknown keys ignored), strings only (D9-D11, D13), D14 roles.
DEEPSEEK = Provider(
    name="deepseek",
    roles=BASE_ROLES | {"latest_reminder"},  # D14 (2026 wording)
    content_parts=False,  # D9, D10
    tool_text_only=True,  # D9
    null_content=CALLER,  # D12 implies content optional with calls; D13: null refused elsewhere
    missing_content=frozenset(),  # D11: the key on every message
    thinking_models=("deepseek-reasoner*", "deepseek-v4*", "!deepseek-reasoner-r1*"),  # D3-D5
    thinking_switch="thinking",
)
#: Gemini's OpenAI-compatible layer (G1-G19).
GEMINI = Provider(
    name="gemini",
    roles=BASE_ROLES | {"developer"},
    tool_text_only=True,  # seed 002: a tool message's content must be a string
    null_content=frozenset(),  # G9: null refused everywhere
    missing_content=CALLER,  # G10's workaround: leave the key out of tool-call turns
    tool_name="expected",  # G13: Google's examples send it; accepted, not required
    signature_models=("gemini-3*",),  # G1, G2 (Gemini 2.5: "optional to return")
    split_calls=False,  # G4
)
#: Moonshot Kimi (provider-rules §4, B1): OpenAI-shaped, thinking models need reasoning.
KIMI = Provider(
    name="kimi",
    # "Kimi k2.5+" (§4 summary row): the thinking models and the later generations
    thinking_models=("kimi-k2-thinking*", "kimi-k2.[5-9]*", "kimi-k[3-9]*"),
    thinking_switch="thinking",
    empty_refused=frozenset({"system"}),  # issue 22: empty system prompt refused
)
#: Mistral La Plateforme: pydantic models with extra="forbid" (B1 422 extra_forbidden).
MISTRAL = Provider(
    name="mistral",
    id_max_length=9,  # §4: exactly 9 of [a-zA-Z0-9]
    id_pattern="[a-zA-Z0-9]{9}",
    message_fields=_frozen(
        {
            "system": ("role", "content"),
            "user": ("role", "content"),
            "assistant": ("role", "content", "tool_calls", "prefix"),
            "tool": ("role", "content", "tool_call_id", "name"),
        }
    ),
    call_fields=_CALL | {"index"},  # the SDK's ToolCall carries index; B1: "name" refused
    alternation_models=("*",),  # §4: Unexpected role 'user' after role 'tool'
)
#: Groq: a strict per-role schema (§4, B1: reasoning_content, status, timestamp, metadata, id
#: "unsupported"; the doc's 400 on messages[].name), tool content a string; gpt-oss models
#: want ``name`` on tool messages (§4, REPORTED: ``Tools should have a name!``).
GROQ = Provider(
    name="groq",
    roles=BASE_ROLES | {"developer"},
    tool_text_only=True,
    tool_name_models=("openai/gpt-oss*", "gpt-oss*"),
    message_fields=_frozen(
        {
            "system": ("role", "content"),
            "developer": ("role", "content"),
            "user": ("role", "content"),
            "assistant": ("role", "content", "tool_calls"),
            "tool": ("role", "content", "tool_call_id", "name"),
        }
    ),
    call_fields=_CALL,
)
#: xAI: "Only messages of role 'user' can have a name." (§4); arguments parsed (B1); "Each
#: message must have at least one content element." (§4), tool-call turns included (issue 22);
#: ``tool_choice`` only with ``tools`` (B1).
XAI = Provider(
    name="xai",
    roles=BASE_ROLES | {"developer"},
    null_content=frozenset(),
    missing_content=frozenset(),  # ours: a missing key reads as null to its gateway
    tool_choice_needs_tools=True,
    empty_parts=False,
    tool_name="refused",
    refused_fields=_frozen(
        {role: ("name",) for role in ("system", "developer", "assistant", "tool")}
    ),
)
#: Qwen / DashScope: OpenAI's rules under its own prefix (§4); `function` role accepted.
QWEN = Provider(name="qwen", roles=BASE_ROLES | {"function"})
#: vLLM (and other template servers): arguments parsed to an object (B1); Mistral-family
#: templates check ids and alternation.
VLLM = Provider(
    name="vllm",
    roles=BASE_ROLES | {"developer"},
    id_max_length=9,
    id_pattern="[a-zA-Z0-9]{9}",
    id_models=MISTRAL_FAMILY,
    alternation_models=MISTRAL_FAMILY,
)
#: Ollama's /v1: Go structs (unknown keys ignored; a null content only on tool-call turns, per
#: its converter). Its Mistral path pairs results by id (B1: ``Unexpected tool call id
#: b87624841 in tool results``, a 9-character id: a pairing error, not a format one).
OLLAMA = Provider(name="ollama")
#: Anthropic: the Messages API's reference validator. Its OpenAI-compatible chat layer hoists
#: system/developer messages (provider-rules.md §4 "Anthropic (OpenAI-compat layer)"). Its
#: chat id check (``^[a-zA-Z0-9_-]+$``, §4 ClawRouter#17) is not modelled by the chat
#: emulator yet, so the row leaves chat ids alone (repair on reject has AN1).
ANTHROPIC = Provider(
    name="anthropic",
    roles=BASE_ROLES | {"developer"},
)
#: Zhipu GLM: its chat API answers only the generic ``1214`` (provider-rules.md §4, cause not
#: known), so its chat rules are OpenAI's without a strict schema (nothing more is known).
GLM = Provider(name="glm")
#: MiniMax: chat pairing as OpenAI's (provider-rules.md §4 "MiniMax-style", error 2013); no
#: schema evidence, so unknown keys are left alone.
MINIMAX = Provider(name="minimax")

#: Gemini on Vertex AI and through Code Assist (issue 33): Google's models, so Gemini's chat
#: facts on their OpenAI-compatible paths; what their native endpoints refuse differs by
#: endpoint, and is the Gemini-native package's data (proxy/core/gemini/facts.py).
VERTEX = replace(GEMINI, name="vertex")
CODE_ASSIST = replace(GEMINI, name="code-assist")

PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        *(OPENAI, DEEPSEEK, GEMINI, KIMI, MISTRAL, GROQ, XAI, QWEN, VLLM, OLLAMA),
        *(ANTHROPIC, GLM, MINIMAX, VERTEX, CODE_ASSIST),
    )
}


def model_of(request: Mapping[str, Any]) -> str:
    """The request's ``model``, or ``""`` when it has none."""
    model = request.get("model")
    return model if type(model) is str else ""


@lru_cache(maxsize=256)
def _matches(model: str, globs: tuple[str, ...]) -> bool:
    name = model.lower().removeprefix("models/")  # Gemini's resource names (G1 tests)
    found = False
    for glob in globs:
        if glob.startswith("!"):
            if fnmatchcase(name, glob[1:].lower()):
                return False
        elif fnmatchcase(name, glob.lower()):
            found = True
    return found


def model_matches(model: str, globs: Iterable[str]) -> bool:
    """Whether ``model`` matches a glob (case-insensitive; ``!glob`` excludes; a ``models/``
    prefix is ignored). No model matches nothing."""
    return bool(model) and _matches(model, tuple(globs))


def switch(request: Mapping[str, Any], name: str) -> bool | None:
    """The request's ``{name: {"type": "enabled" | "disabled"}}`` as True/False; None if unset."""
    value = request.get(name) if name else None
    kind = value.get("type") if type(value) is dict else None
    return {"enabled": True, "disabled": False}.get(kind) if type(kind) is str else None


def provider_of(params: Mapping[str, Any]) -> Provider:
    """The provider record a rule's parameters carry (OpenAI's when none is given)."""
    found = params.get("provider")
    return found if isinstance(found, Provider) else OPENAI
