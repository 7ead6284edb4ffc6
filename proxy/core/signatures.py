"""The signature catalogue: every provider error text the project knows, and the rule it names.

One row per evidence row (``id``: the row of ``provider-rules.md`` O/D/G, of its §4 second tier
(``MI`` Mistral, ``GR`` Groq, ``XA`` xAI, ``KI`` Kimi, ``QW`` Qwen/DashScope, ``AN`` Anthropic
compat, ``VL`` vLLM and template servers, ``OL`` Ollama, ``OR`` OpenRouter hosts, ``MM``
MiniMax-style, ``VE`` Volcengine, ``AZ`` Azure), of ``providers-second-tier.md`` B1, or of
``responses-api.md`` A2 (``R``), or of ``anthropic-messages.md`` §3 (``M``, in
:mod:`proxy.core.messages.signatures`)). Data only; what a row is and how it is found are in
:mod:`proxy.core.errortext`. :func:`match` is the entry point. Pure: no I/O.

Patterns are matched case-insensitively against decoded sentences (envelopes opened first, so
no pattern copes with escaped quotes). Named groups give the place: ``path`` (a field path as
the provider spells it), ``name`` (a key appended to ``path``), ``index`` (an item index).
Where the sentence names no place, the ``param`` of its envelope does. The first match wins:
narrow rows come before broad ones. ``rule=None``: known, counted, never retried.
"""

from __future__ import annotations

from proxy.core.errortext import PROTECTED, Match, Signature, find, sig
from proxy.core.registry import CATALOGUES

__all__ = ["PROTECTED", "SIGNATURES", "Match", "Signature", "match"]

_M = r"(?P<path>messages\.?\[\d+\])"  # messages[3] / messages.[3]
_CALL = r"(?P<path>messages\.?\[\d+\]\.tool_calls\[\d+\]"  # …a tool call, closed by the row
_ID9 = {"pattern": r"^[a-zA-Z0-9]{9}$", "max_length": 9}
_ALL_4XX = (400, 404, 422)
#: The upstream said the model thinks (or checks signatures): whatever the model globs say.
_ANY_MODEL = {"models": ["*"]}

# One row per signature, laid out as a table: ruff format would give each argument its own
# line and triple the file.
# fmt: off
_FIELDS: tuple[Signature, ...] = (
    # Field refusals: the upstream names a key it does not accept; strip it there. Anchored at
    # the sentence's start: upstreams echo client values inside their sentences (``Invalid
    # value: '…'``), and a field named inside echoed text must not pass for a refusal.
    sig("O12", "openai", "unknown_message_field",
        r"^(?:\d{3} )?Unknown parameter: '(?P<path>[^']+)'", api="any", strip=True, learn=True,
        evidence=("O13",)),
    sig("O22", "openai", "unknown_message_field",
        r"^Additional properties are not allowed \('(?P<name>[^']+)' was unexpected\)"
        r" - '(?P<path>messages\.\d+)'", api="any", strip=True, learn=True),
    sig("MI7", "mistral", "unknown_message_field",
        r"^extra_forbidden at (?P<path>\S+): Extra inputs are not permitted",
        api="any", strip=True, learn=True),
    sig("GR1", "groq", "unknown_message_field",
        r"^(?:'messages\.\d+' : for 'role: ?\w+' the following must be satisfied\[\()?"
        r"'(?P<path>messages\.\d+(?:\.\w+)*)' : property '(?P<name>\w+)' is unsupported",
        api="any", strip=True, learn=True, evidence=("GR2", "GR3")),
    sig("GR4", "groq", "unknown_message_field", r"^property '(?P<name>\w+)' is unsupported",
        api="any", strip=True, learn=True),
    sig("D7", "deepseek", "unknown_message_field",
        r"^The reasoning_content is an intermediate result.*? Please remove the"
        r" reasoning_content from your message",
        strip=True, learn=True, place="messages[*].reasoning_content"),
    sig("G14", "gemini", "unknown_message_field",
        r"^Invalid JSON payload received\. Unknown name \"(?P<path>\w+)\": Cannot find field",
        api="any", strip=True, learn=True),
    sig("O16", "openai", "unknown_message_field",
        r"^Invalid '(?P<path>messages\[\d+\]\.name)': string does not match pattern", strip=True),
    sig("VL1", "vllm", "unknown_message_field",
        r"^(?:Value error, )?`(?P<path>tools)` must not be an empty array", api="any", strip=True),
)

_OPENAI: tuple[Signature, ...] = (
    sig("O1", "openai", "orphan_tool_result",
        r"messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"),
    sig("O2", "openai", "missing_tool_result",
        r"(?-i:An) assistant message with 'tool_calls' must be followed by tool messages"
        r" responding to each 'tool_call_id'\. The following tool_call_ids did not have"),
    sig("O3", "openai", "orphan_tool_result",
        r"'tool_call_id' of '[^']*' not found in 'tool_calls' of previous message"),
    sig("O4", "openai", "duplicate_tool_result",
        r"Duplicate value for 'tool_call_id' of '[^']*', in messages\[\d+\] and"
        r" messages\[(?P<index>\d+)\]"),
    sig("O5", "openai", "arguments_not_string",
        _CALL + r"\.function\.arguments)': expected a string, but got"),
    sig("O7", "openai", "empty_tool_calls", r"Invalid '(?P<path>messages\[\d+\]\.tool_calls)':"
        r" empty array"),
    sig("O8", "openai", "too_many_tool_calls",
        r"Invalid '(?P<path>messages\[\d+\]\.tool_calls)': array too long"),
    sig("O10", "openai", "tool_call_id_format", r"Invalid '" + _CALL + r"\.id)': string too long"),
    sig("O11", "openai", "tool_call_shape",
        r"Invalid '" + _CALL + r"\.function\.name)': empty string"),
    sig("O14", "openai", "content_null",
        r"Invalid value for 'content': expected a string, got null"),
    sig("O18", "openai", "image_outside_user",
        r"Invalid '" + _M + r"'\. Image URLs are only allowed for messages with role 'user'"),
    sig("O20", "openai", "developer_role",
        r"'(?P<path>messages\[\d+\]\.role)' does not support 'developer' with this model"),
    sig("O21", "openai", "legacy_function_role",
        r"'(?P<path>messages\[\d+\]\.role)' does not support 'function' with this model"),
    sig("AZ1", "azure", "tool_call_shape",
        r"Missing required parameter: '" + _CALL + r"\.type)'", statuses=(400, 424)),
    sig("O9", "openai", None, r"Invalid 'tools': array too long"),
    sig("O15", "openai", None, r"Invalid 'messages': empty array"),
    sig("O19", "openai", None, r"does not support 'system' with this model"),
)

_DEEPSEEK: tuple[Signature, ...] = (
    sig("D1", "deepseek", "orphan_tool_result",
        r"Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"),
    sig("D2", "deepseek", "missing_tool_result",
        r"\(insufficient tool messages following tool_calls message\)"),
    sig("D3", "deepseek", "missing_reasoning_content",
        r"Missing `reasoning_content` field in the assistant message at message index"
        r" (?P<index>\d+)", preset="deepseek", params=_ANY_MODEL),
    sig("D4", "deepseek", "missing_reasoning_content",
        r"The `reasoning_content` in the thinking mode must be passed back to the API",
        preset="deepseek", params=_ANY_MODEL),
    sig("D8", "deepseek", "consecutive_same_role",
        r"does not support successive user or assistant messages \(messages\[\d+\] and"
        r" messages\[(?P<index>\d+)\]", preset="deepseek"),
    sig("D9", "deepseek", "content_parts_unsupported",
        r"(?P<path>messages\[\d+\]): invalid type: sequence, expected a string", preset="deepseek"),
    sig("D10", "deepseek", "content_parts_unsupported",
        r"(?P<path>messages\[\d+\]): data did not match any variant of untagged enum"
        r" ChatCompletionRequestContent", preset="deepseek"),
    sig("D11", "deepseek", "content_null", r"(?P<path>messages\[\d+\]): missing field `content`",
        preset="deepseek"),
    sig("D12", "deepseek", "empty_assistant_message",
        r"Invalid assistant message: content or tool_calls must be set", preset="deepseek"),
    sig("D14", "deepseek", "developer_role",
        r"(?P<path>messages\[\d+\])\.role: unknown variant `developer`", preset="deepseek"),
    sig("D16", "deepseek", None, r"tools\[\d+\]: unknown variant `custom`"),
    sig("D19", "deepseek", None, r"\.role: unknown variant `tool`, expected `user` or `assistant`"),
)

_GEMINI: tuple[Signature, ...] = (
    sig("G1", "gemini", "thought_signature", r"is missing a thought_signature",
        preset="gemini", params=_ANY_MODEL, evidence=("G2",)),
    sig("G5", "gemini", "thought_signature", r"(?:Corrupted|Invalid) thought signature",
        preset="gemini", params=_ANY_MODEL),
    sig("G6", "gemini", "function_call_turn_order",
        r"function call turn comes immediately after a user turn or after a function response",
        preset="gemini"),
    sig("G7", "gemini", "missing_tool_result",
        r"number of function response parts is equal to the number of function call parts",
        preset="gemini"),
    sig("G8", "gemini", "misplaced_tool_result",
        r"function response turn comes immediately after a function call turn", preset="gemini"),
    sig("G9", "gemini", "content_null", r"Expected string or list of content parts, got: null",
        preset="gemini"),
    sig("G11", "gemini", "empty_text", r"it has an empty text parameter", preset="gemini"),
    sig("G13", "gemini", "tool_message_name", r"function_response\.name: Name cannot be empty",
        preset="gemini"),
    sig("G12", "gemini", None, r"contents\.parts must not be empty"),
    sig("G15", "gemini", None, r"Invalid function name\. Must start with a letter"),
    sig("G18", "gemini", None, r"Function calling with a response mime type"),
)

_SECOND_TIER: tuple[Signature, ...] = (
    sig("MI1", "mistral", "tool_call_id_format",
        r"Tool call id was \S* but must be a-z, A-Z, 0-9, with a length of 9",
        statuses=(400, 404, 422, 500), params=_ID9, preset="mistral", evidence=("VL5",)),
    sig("MI2", "mistral", "user_after_tool", r"Unexpected role '(?:user|system)' after role 'tool'",
        preset="mistral"),
    sig("MI3", "mistral", "orphan_tool_result",
        r"Unexpected role 'tool' after role '(?:user|system)'", preset="mistral",
        evidence=("MI8",)),
    sig("MI4", "mistral", "missing_tool_result",
        r"Not the same number of function calls and responses", preset="mistral"),
    sig("MI5", "mistral", "empty_assistant_message",
        r"Assistant message must have either content or tool_calls, but not none",
        preset="mistral"),
    sig("MI6", "mistral", None, r"Expected last role User or Tool \(or Assistant with prefix"),
    # Emulator wordings with no public source (proxy/emulator/mistral.py, kimi.py, ollama.py).
    sig("MI11", "mistral", "developer_role",
        r"^union_tag_invalid at (?P<path>messages\[\d+\]): Input tag 'developer' found",
        preset="mistral"),
    sig("VL8", "vllm", "developer_role", r"Unexpected role '\w+' after role 'developer'",
        preset="vllm"),
    sig("KI4", "kimi", "developer_role",
        r"Invalid request: invalid role at (?P<path>messages\[\d+\])", preset="kimi"),
    sig("OL3", "ollama", "arguments_invalid_json", r"^invalid tool call arguments"),
    sig("MI9", "ollama", "orphan_tool_result", r"Unexpected tool call id \S+ in tool results"),
    sig("GR5", "groq", "tool_message_name", r"Tools should have a name", preset="gemini"),
    sig("XA1", "xai", "unknown_message_field", r"Only messages of role 'user' can have a name",
        preset="xai"),
    sig("XA2", "xai", "arguments_invalid_json",
        r"The arguments to a tool_call with ID '[^']*' are not a valid JSON string", preset="xai"),
    sig("XA3", "xai", "tool_choice_without_tools",
        r"A tool_choice was set on the request but no tools were specified", preset="xai"),
    sig("XA5", "xai", "content_null", r"Each message must have at least one content element",
        preset="xai"),
    sig("XA4", "xai", None, r"The model expects a single `text` element per message"),
    sig("KI1", "kimi", "missing_tool_result",
        r"(?-i:an) assistant message with 'tool_calls' must be followed by tool messages"),
    sig("KI2", "kimi", "orphan_tool_result", r"tool_call_id +(?:\S+ )?is not found"),
    sig("KI5", "kimi", "empty_system_message",
        r"the message at position (?P<index>\d+) with role 'system' must not be empty",
        preset="kimi"),
    sig("KI3", "kimi", "missing_reasoning_content",
        r"thinking is enabled but reasoning_content is missing in assistant tool call message"
        r" at index (?P<index>\d+)", preset="kimi", params=_ANY_MODEL),
    sig("QW1", "qwen", "orphan_tool_result",
        r"messages with role \"tool\" must be a response to a preceeding message"),
    sig("QW2", "qwen", "missing_tool_result",
        r"An assistant message with \"tool_calls\" must be followed by tool messages"
        r"(?:.*?did not have response messages: message\[(?P<index>\d+)\])?"),
    sig("QW3", "qwen", "developer_role",
        r"developer is not one of \[.*\] - '(?P<path>messages\.\[\d+\]\.role)'",
        preset="qwen"),
    sig("QW4", "qwen", "empty_tool_calls", r"Empty tool_calls is not supported in message"),
    sig("QW5", "qwen", "content_object",
        r"Invalid type for '(?P<path>messages\.\[\d+\]\.content)': expected one of a string or"
        r" array of objects, but got an object", preset="qwen"),
    sig("VE1", "volcengine", "developer_role",
        r"`messages\.role` specified in the request are not valid: invalid value: `developer`"),
    sig("AN1", "anthropic", "tool_call_id_format",
        r"(?P<path>messages\.\d+)\.content\.\d+\.tool_use\.id: String should match pattern",
        params={"pattern": r"^[a-zA-Z0-9_-]+$"}),
    sig("AN2", "anthropic", "missing_tool_result",
        r"(?P<path>messages\.\d+):\s*`tool_use` ids were found without `tool_result` blocks",
        evidence=("B1-deepseek-anthropic",)),
    sig("AN3", "anthropic", "orphan_tool_result",
        r"unexpected `tool_use_id` found in `tool_result`"),
    sig("AN4", "anthropic", "empty_text", r"text content blocks must be non-empty"),
    sig("VL2", "vllm", "arguments_invalid_json",
        r"JSONDecodeError|Unterminated string starting at: line \d+|Can only get item pairs from"
        r" a mapping|'str object' has no attribute 'items'", preset="vllm",
        evidence=("VL3", "VL4")),
    sig("OR1", "openrouter", "arguments_invalid_json", r"^Extra data: line \d+ column \d+"),
    sig("OL1", "ollama", "arguments_not_string",
        r"cannot unmarshal \w+ into Go struct field \S*\.function\.arguments of type string"),
    sig("OL2", "ollama", "content_parts_unsupported",
        r"cannot unmarshal array into Go struct field \S*\.content of type string",
        preset="deepseek"),
    sig("VL6", "llamacpp", "consecutive_same_role",
        r"(?:conversation roles must alternate|Cannot have 2 or more assistant messages at the"
        r" end)", statuses=(400, 422, 500), evidence=("VL7", "MI10")),
    sig("MM1", "minimax", "misplaced_tool_result",
        r"tool call result does not follow tool call \(2013\)"),
    sig("OR2", "openrouter", None, r"require OpenRouter reasoning details to be preserved"),
    sig("ZH1", "zhipu", None, r"\"1214\"|messages 参数非法"),
)

_RESPONSES: tuple[Signature, ...] = (
    sig("R1", "openai", "responses_missing_output", r"No tool output found for function call",
        api="responses"),
    sig("R2", "openai", "responses_orphan_output",
        r"No tool call found for function call output with call_id", api="responses"),
    sig("R3", "openai", "responses_reasoning_adjacency",
        r"of type 'reasoning' was provided without its required following item", api="responses"),
    sig("R4", "openai", "responses_missing_reasoning_ref",
        r"of type '\w+' was provided without its required 'reasoning' item", api="responses",
        evidence=("R5",)),
    sig("R6", "openai", "responses_store_false",
        r"Item with id '[^']+' not found|Items are not persisted", api="responses",
        statuses=_ALL_4XX, evidence=("R6b", "R6c")),
    sig("R9", "openai", "responses_duplicate_item",
        r"Duplicate item found with id \S+ Remove duplicate items", api="responses"),
    sig("R10", "openai", "responses_id_prefix",
        r"Invalid '(?P<path>input\[\d+\]\.id)': '[^']*'\. Expected an ID that begins with",
        api="responses"),
    sig("R11", "openai", "responses_call_id_format",
        r"Invalid '(?P<path>input\[\d+\]\.call_id)': string too long", api="responses"),
    sig("R13", "openai", "responses_output_content_types",
        r"Invalid value: 'output_text'\. Supported values are: 'input_text'", api="responses"),
    sig("R15", "openai", "responses_upstream_tool_types",
        r"Only `type:\"function\"` tools are supported on this endpoint", api="responses"),
    sig("R16", "deepseek", "responses_reasoning_passback",
        r"The `reasoning_text` in the thinking mode must be passed back", api="responses"),
    sig("R7", "openai", None, r"The encrypted content .* could not be verified", api="responses"),
    sig("R8", "openai", None, r"Previous response with id '[^']*' not found|Invalid"
        r" `previous_response_id`", api="responses"),
    sig("R14", "openai", None, r"Supported values are: 'search', 'open_page'", api="responses"),
)

# fmt: on

#: The catalogue, in matching order: field refusals, then each provider's rows.
SIGNATURES: tuple[Signature, ...] = (
    *_FIELDS,
    *_OPENAI,
    *_DEEPSEEK,
    *_GEMINI,
    *_SECOND_TIER,
    *_RESPONSES,
    *(row for rows in CATALOGUES.values() for row in rows),
)


def match(status: int, body: bytes | str, api: str | None = None) -> Match | None:
    """The first catalogued signature in an upstream answer, with the place it names.

    ``body`` is the error body as received (bytes or text; any envelope). ``api`` keeps only
    that wire API's rows (and the API-neutral field refusals). None: no row knows this text.
    """
    return find(SIGNATURES, status, body, api)
