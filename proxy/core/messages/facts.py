"""What each upstream accepts in an Anthropic Messages request, as data (one record a provider).

Rules read the record of their policy's provider dialect (:func:`facts_of`) and never test a
provider's name. Every field cites its row of ``anthropic-messages.md`` §3 (M1-M38) and the
provider matrix; where the matrix says ``?`` (no evidence) the default is to accept, so that
the proxy leaves the history alone (precision first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

#: Roles of the Messages API (M26: anything else is refused everywhere).
ROLES = frozenset({"user", "assistant", "system"})
#: Claude models that take a ``role: system`` message (M24: Opus 4.8, Opus 5, Fable 5, Mythos 5).
_SYSTEM_ROLE_CLAUDES = (
    "claude-opus-4-8*",
    "claude-opus-4.8*",
    "claude-opus-5*",
    "claude-fable-5*",
    "claude-mythos-5*",
)
#: Claude models that refuse an assistant prefill (M28: Opus 4.6+, Sonnet 4.6+, Opus/Sonnet 5,
#: Fable, Mythos; the model list of ericc-ch/copilot-api PR#261).
_NO_PREFILL_CLAUDES = (
    "claude-opus-4-[6-9]*",
    "claude-opus-4.[6-9]*",
    "claude-sonnet-4-[6-9]*",
    "claude-sonnet-4.[6-9]*",
    "claude-opus-5*",
    "claude-sonnet-5*",
    "claude-fable*",
    "claude-mythos*",
)


@dataclass(frozen=True, slots=True)
class MessagesFacts:
    """What one upstream refuses in ``POST /v1/messages`` (defaults: accept)."""

    #: Consecutive same-role messages are merged before validation (§1; DS does not: M6).
    merges_same_role: bool = True
    #: Two results for one ``tool_use_id`` are accepted (M4: GLM answers 200).
    duplicate_results: bool = False
    #: ``tool_use`` ids must be unique in the whole request (M5: A), else per message.
    ids_unique_per_request: bool = False
    #: The pattern every ``tool_use.id`` must match in full (M7: A only), "" for any.
    tool_use_id_pattern: str = ""
    #: Empty or whitespace-only text, empty messages, a final assistant ending in whitespace,
    #: ``cache_control`` on empty text and more than 4 breakpoints are refused (M11-M16: A).
    strict_text: bool = False
    #: Thinking blocks are checked: signatures, placement in the final turn (M17-M20: A).
    signed_thinking: bool = False
    #: Globs of the models that think unless ``thinking.type`` is ``disabled`` and then want
    #: a thinking block on every tool-use turn (M21: DS by default, K2.5/K2.6/for-coding).
    thinking_default_models: tuple[str, ...] = ()
    #: Globs of the models that always think, whatever ``thinking`` says (M21: K2-thinking,
    #: K2.7, K3).
    thinking_always_models: tuple[str, ...] = ()
    #: Globs of the models whose ``thinking.type`` must be ``enabled`` (M32: K2.7-code, K3).
    thinking_enabled_only_models: tuple[str, ...] = ()
    #: Globs of the models that take a ``role: system`` message (M24); ``("*",)``: all.
    system_role_models: tuple[str, ...] = ("*",)
    #: Where a system message may stand is checked (M25: A's placement rules).
    system_placement: bool = False
    #: Globs of the models that refuse a final assistant message (M28).
    prefill_refused_models: tuple[str, ...] = ()
    #: Tool names must be unique (M29: A, DS).
    unique_tool_names: bool = False
    #: Most tools in one request (M30: K 128), 0 for no known limit.
    max_tools: int = 0
    #: Content block types known per role (M22: DS), None when any is accepted.
    block_types: Mapping[str, frozenset[str]] | None = None
    #: ``tool_reference`` blocks inside a ``tool_result`` are understood (M23: K cannot).
    tool_reference: bool = True
    #: Tool ``type`` values accepted (M31: DS, web search only; absent = custom), None: any.
    tool_types: frozenset[str] | None = None
    #: Top-level request fields refused (§1: MiniMax refuses ``output_config``).
    refused_fields: frozenset[str] = frozenset()


#: Upstreams with no Messages evidence: accept everything.
LENIENT = MessagesFacts()
#: Anthropic (api.anthropic.com): the reference validator.
ANTHROPIC = MessagesFacts(
    ids_unique_per_request=True,  # M5
    tool_use_id_pattern=r"[a-zA-Z0-9_-]+",  # M7
    strict_text=True,  # M11-M16
    signed_thinking=True,  # M17-M20
    system_role_models=_SYSTEM_ROLE_CLAUDES,  # M24
    system_placement=True,  # M25
    prefill_refused_models=_NO_PREFILL_CLAUDES,  # M28
    unique_tool_names=True,  # M29
)
#: DeepSeek (api.deepseek.com/anthropic): serde structs, no merging, thinks by default.
DEEPSEEK = MessagesFacts(
    merges_same_role=False,  # M6 (AstrBotDevs/AstrBot#7871)
    thinking_default_models=("*",),  # M21: "DS thinks by default" (create-message docs)
    system_role_models=(),  # M24
    unique_tool_names=True,  # M29
    block_types=MappingProxyType(  # M22 (api-docs.deepseek.com/api/create-message)
        {
            "user": frozenset({"text", "image", "tool_result"}),
            "assistant": frozenset(
                {"text", "thinking", "tool_use", "server_tool_use", "web_search_tool_result"}
            ),
        }
    ),
    tool_types=frozenset({"web_search_20250305", "web_search_20260209"}),  # M31
)
#: Kimi (api.moonshot.ai/anthropic): thinking models, 128 tools, no tool_reference.
KIMI = MessagesFacts(
    thinking_default_models=("kimi-k2.5*", "kimi-k2.6*", "kimi-for-coding*"),  # M21
    thinking_always_models=("kimi-k2-thinking*", "kimi-k2.7*", "kimi-k3*"),  # M21
    thinking_enabled_only_models=("kimi-k2.7*", "kimi-k3*"),  # M32
    max_tools=128,  # M30
    tool_reference=False,  # M23
)
#: Zhipu GLM (open.bigmodel.cn/api/anthropic): duplicate results pass (M4), system refused.
GLM = MessagesFacts(duplicate_results=True, system_role_models=())
#: MiniMax (api.minimax.io/anthropic): role system refused (M24, MiniMax-M2.7#43).
MINIMAX = MessagesFacts(
    system_role_models=(),
    refused_fields=frozenset({"output_config"}),  # §1, MiniMax-AI/MiniMax-M2.7#17
)

#: The facts of each provider dialect with a Messages endpoint (others: :data:`LENIENT`).
BY_DIALECT: Mapping[str, MessagesFacts] = MappingProxyType(
    {"anthropic": ANTHROPIC, "deepseek": DEEPSEEK, "kimi": KIMI, "glm": GLM, "minimax": MINIMAX}
)


def facts_of(dialect: str) -> MessagesFacts:
    """What the Messages endpoint of provider dialect ``dialect`` refuses."""
    return BY_DIALECT.get(dialect, LENIENT)
