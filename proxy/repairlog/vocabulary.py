"""The keys the wire APIs define, kept as they are by ``capture = redacted | none``.

Any other key of a body (a JSON schema's property names, a client's own extra fields) is the
client's string, so it is stored as a keyed digest instead; a finding's path is rewritten
the same way, so it still points into the stored body. Sources: the request schemas of chat
completions, the Responses API and Anthropic Messages, and the extras providers add.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from proxy.core.wire import WIRES

_SHARED = frozenset(
    {
        # request level
        *("model", "messages", "input", "instructions", "system", "tools", "tool_choice"),
        *("parallel_tool_calls", "stream", "stream_options", "include_usage", "temperature"),
        *("top_p", "top_k", "n", "stop", "stop_sequences", "max_tokens", "seed", "user"),
        *("max_completion_tokens", "max_output_tokens", "presence_penalty", "logprobs"),
        *("frequency_penalty", "logit_bias", "top_logprobs", "metadata", "store", "include"),
        *("response_format", "json_schema", "schema", "reasoning", "reasoning_effort"),
        *("effort", "summary", "text", "format", "verbosity", "modalities", "audio"),
        *("prediction", "service_tier", "background", "conversation", "truncation"),
        *("previous_response_id", "prompt", "prompt_cache_key", "safety_identifier"),
        *("thinking", "budget_tokens", "web_search_options", "functions", "function_call"),
        *("extra_body", "enable_thinking", "chat_template_kwargs", "options"),
        # messages, items, content parts and blocks
        *("role", "content", "name", "tool_calls", "tool_call_id", "refusal", "id", "type"),
        *("reasoning_content", "reasoning_details", "function", "arguments", "prefix"),
        *("partial", "annotations", "image_url", "url", "detail", "input_audio", "data"),
        *("file", "file_id", "filename", "file_data", "cache_control", "ttl", "source"),
        *("media_type", "tool_use_id", "is_error", "signature", "citations", "call_id"),
        *("output", "status", "encrypted_content", "action", "results", "queries", "index"),
        *("server_label", "thought_signature", "extra_content", "object"),
        # tool definitions (the schema's own keywords; property names are the client's)
        *("description", "parameters", "strict", "properties", "required", "items", "enum"),
        *("additionalProperties", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions"),
        *("default", "title", "minimum", "maximum", "minItems", "maxItems", "minLength"),
        *("maxLength", "pattern", "const", "nullable", "input_schema", "examples"),
    }
)

#: The keys of every API: chat's, Responses' and Messages' above, each other row's own.
KNOWN_KEYS = _SHARED.union(*(wire.vocabulary for wire in WIRES.values()))

_KEY_STEP = re.compile(r"(^|\.)([^.\[\]]+)")


def stored_key(key: str, digest: Callable[[str], str]) -> str:
    """``key`` as a redacted body holds it: its ``digest`` (the log's keyed one) when it is no
    key of the APIs."""
    return key if key in KNOWN_KEYS else digest(key)


def stored_path(path: str, digest: Callable[[str], str]) -> str:
    """A finding's path (``messages[1].my_field``) with the keys a redacted body hashes hashed
    the same way (``messages[1].#3f…``)."""
    return _KEY_STEP.sub(lambda m: m[1] + stored_key(m[2], digest), path)
