"""The Anthropic Messages error texts (anthropic-messages.md §3, rows M1-M36) as catalogue rows.

Data only (see :mod:`proxy.core.errortext` for what a row is); :mod:`proxy.core.signatures`
puts them in the catalogue. Anthropic counts merged messages in its indexes (``messages.6``):
the retry planner widens such an index to the run of messages it names
(:meth:`~proxy.core.messages.items.Messages.named`). Texts several providers share (M1, M2, M4
on DeepSeek's and Kimi's Messages endpoints) carry no preset: the upstream's own policy says
how it counts. ``rule=None``: known, counted, never retried (no repair, or upstream-only).
"""

from __future__ import annotations

from proxy.core.errortext import Signature, sig

_AT = r"(?P<path>messages\.\d+(?:\.content\.\d+)?)"  # messages.6 / messages.6.content.2
_DS_AT = r"(?P<path>messages\[\d+\](?:\.content\[\d+\])?)"  # serde: messages[1].content[0]
_MSG = "messages"
_ANT = "anthropic"

# One row per signature, laid out as a table (as in proxy.core.signatures).
# fmt: off
MESSAGES: tuple[Signature, ...] = (
    sig("M10", "anthropic", "messages_orphan_server_tool_result",
        _AT + r": unexpected `tool_use_id` found in `\w+_tool_result` blocks",
        api=_MSG, preset=_ANT),
    sig("M1", "anthropic", "messages_missing_tool_result",
        _AT + r":\s*`tool_use` ids were found without `tool_result` blocks immediately after",
        evidence=("M3", "M6"), api=_MSG),
    sig("M1-MM", "minimax", "messages_missing_tool_result",
        r"tool call result does not follow tool call \(2013\)", api=_MSG),
    sig("M2", "anthropic", "messages_orphan_tool_result",
        _AT + r": unexpected `tool_use_id` found in `tool_result` blocks", api=_MSG),
    sig("M2-MM", "minimax", "messages_orphan_tool_result",
        r"tool result's tool id\([^)]*\) not found \(2013\)", api=_MSG),
    sig("M4", "anthropic", "messages_duplicate_tool_result",
        _AT + r": each tool_use must have a single result", api=_MSG),
    sig("M5", "anthropic", "messages_duplicate_tool_use_id",
        _AT + r": `tool_use` ids must be unique", api=_MSG, preset=_ANT),
    sig("M7", "anthropic", "messages_tool_use_id_format",
        _AT + r"\.(?:tool_use\.id|tool_result\.tool_use_id): String should match pattern",
        api=_MSG, preset=_ANT),
    sig("M8", "anthropic", None, r"tool_use\.name: String should have at least 1 character",
        api=_MSG),
    sig("M9", "glm", None, r"'ClaudeContentBlockToolResult' object has no attribute",
        statuses=(400, 422, 500), api=_MSG),
    sig("M11", "anthropic", "messages_empty_text", r"text content blocks must be non-empty",
        evidence=("M12",), api=_MSG, preset=_ANT),
    sig("M12", "anthropic", "messages_empty_text",
        r"text content blocks must contain non-whitespace text", api=_MSG, preset=_ANT),
    sig("M15", "anthropic", "messages_empty_text",
        _AT + r"\.text: cache_control cannot be set for empty text blocks", api=_MSG, preset=_ANT),
    sig("M13", "anthropic", "messages_empty_message",
        _AT + r": all messages must have non-empty content except for the optional final",
        api=_MSG, preset=_ANT),
    sig("M14", "anthropic", "messages_final_assistant",
        r"final assistant content cannot end with trailing whitespace", api=_MSG, preset=_ANT),
    sig("M16", "anthropic", "messages_cache_control_limit",
        r"A maximum of 4 blocks with cache_control may be provided", api=_MSG, preset=_ANT),
    sig("M17", "anthropic", "messages_thinking_first",
        r"When `thinking` is enabled, a final `assistant` message must start with a thinking"
        r" block", api=_MSG, preset=_ANT),
    sig("M18", "anthropic", "messages_unsigned_thinking",
        _AT + r"\.thinking\.signature: Field required", api=_MSG, preset=_ANT),
    sig("M18-invalid", "anthropic", "messages_unsigned_thinking",
        _AT + r": Invalid `signature` in `thinking` block", params={"signed_too": True},
        evidence=("M34",), api=_MSG, preset=_ANT),
    sig("M19", "anthropic", "messages_final_assistant",
        _AT + r": When thinking is disabled, an `assistant` message in the final position cannot"
        r" contain `thinking`", api=_MSG, preset=_ANT),
    sig("M20", "anthropic", "messages_final_assistant",
        _AT + r": The final block in an assistant message cannot be `thinking`",
        api=_MSG, preset=_ANT),
    sig("M21-DS", "deepseek", "messages_thinking_on_tool_turns",
        r"The `content\[\]\.thinking` in the thinking mode must be passed back to the API",
        api="messages", preset="deepseek", params={"thinks": True}),
    sig("M21-K", "kimi", "messages_thinking_on_tool_turns",
        r"thinking is enabled but reasoning_content is missing in assistant tool call message"
        r" at index (?P<index>\d+)", api="messages", preset="kimi", params={"thinks": True}),
    sig("M22", "deepseek", "messages_unsupported_block",
        _DS_AT + r": unknown variant `(?:redacted_thinking|document|search_result)`",
        api="messages", preset="deepseek"),
    sig("M23", "kimi", "messages_tool_reference",
        r"unsupported content type in ContentBlockParamUnion: tool_reference",
        api="messages", preset="kimi"),
    sig("M24", "anthropic", "messages_system_message",
        r"role 'system' is not supported on this model", params={"refused": True}, api=_MSG),
    sig("M24-DS", "deepseek", "messages_system_message",
        r"(?P<path>messages\[\d+\])\.role: unknown variant `system`", api="messages",
        preset="deepseek", params={"refused": True}),
    sig("M24-G", "glm", "messages_system_message",
        r"literal_error at (?P<path>messages\[\d+\])\.role: Input should be 'user' or 'assistant'",
        api="messages", preset="glm", params={"refused": True}),
    sig("M24-MM", "minimax", "messages_system_message",
        r"chat content has invalid message role: system \(2013\)", api="messages",
        preset="minimax", params={"refused": True}),
    sig("M26", "anthropic", None, r"Unexpected role \"\w+\"\. Allowed roles are", api=_MSG),
    sig("M26-DS", "deepseek", None, r"\.role: unknown variant `tool`", api=_MSG),
    sig("M28", "anthropic", None,
        r"does not support assistant message prefill|Prefilling assistant messages is not"
        r" supported", api=_MSG),
    sig("M29", "anthropic", "messages_duplicate_tool_name", r"Tool names must be unique",
        api=_MSG, preset=_ANT),
    sig("M30", "kimi", None, r"a max of \d+ tools can be supported", api=_MSG),
    sig("M31", "deepseek", "messages_custom_tool_type", r"tools\[\d+\]: unknown variant `custom`",
        api="messages", preset="deepseek"),
    sig("M32", "kimi", None, r"invalid thinking: only type=enabled is allowed", api=_MSG),
    sig("M33", "anthropic", None,
        r"blocks in the latest assistant message cannot be modified", api=_MSG),
    sig("M35", "deepseek", None, r"does not support this tool_choice", api=_MSG),
    sig("M36", "minimax", None, r"function name or parameters is empty \(2013\)", api=_MSG),
    sig("M-G1214", "glm", None, r"\"1214\"|messages 参数非法", api=_MSG),
)
# fmt: on
