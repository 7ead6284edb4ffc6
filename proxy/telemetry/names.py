"""The GenAI semantic conventions' names for what the proxy knows, as data and small pure rules.

Checked against the conventions (status: Development) on 2026-11-27: ``gen_ai.system`` was
replaced by ``gen_ai.provider.name``, whose well-known values include ``openai``,
``gcp.gemini``, ``gcp.vertex_ai``, ``gcp.gen_ai``, ``anthropic``, ``deepseek``, ``groq``,
``mistral_ai``, ``x_ai``, ``perplexity``, ``aws.bedrock``, ``azure.ai.openai``
(opentelemetry.io/docs/specs/semconv/gen-ai, the JS ``ATTR_GEN_AI_PROVIDER_NAME`` and
``GenAiProviderName`` enums). Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import orjson

#: ``gen_ai.provider.name`` per upstream policy dialect (:data:`proxy.core.policy.DIALECTS`).
#: A dialect the conventions name no provider for keeps its own name (a custom value).
PROVIDER_NAMES: Mapping[str, str] = {
    "openai": "openai",
    "deepseek": "deepseek",
    "gemini": "gcp.gemini",
    "code-assist": "gcp.gemini",  # Code Assist serves Gemini models (gemini-native.md)
    "vertex": "gcp.vertex_ai",
    "anthropic": "anthropic",
    "kimi": "moonshot_ai",
    "mistral": "mistral_ai",
    "groq": "groq",
    "xai": "x_ai",
    "qwen": "alibaba_cloud",
    "glm": "zhipu_ai",
    "minimax": "minimax",
    "vllm": "vllm",
    "ollama": "ollama",
}

#: Values of ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` that put content on spans:
#: ``true`` (the instrumentations' original switch) and the newer opt-in modes (util-genai).
_CAPTURE_ON = frozenset({"true", "span_only", "span_and_event"})

#: Variables that turn tracing on (the OTLP exporter's endpoint, all signals or traces).
TRACES_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
#: Variables that turn the GenAI metrics on.
METRICS_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")


def provider_name(dialect: str) -> str:
    """``gen_ai.provider.name`` of an upstream whose policy has ``dialect``."""
    return PROVIDER_NAMES.get(dialect, dialect)


def wanted(names: tuple[str, ...], environ: Mapping[str, str] = os.environ) -> bool:
    """Whether any of the variables ``names`` is set to something."""
    return any(environ.get(name, "").strip() for name in names)


def content_captured(capture: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether message content goes on spans: only when the standard variable opts in, and
    never when the repair log itself keeps less than everything (``redacted``, ``none``)."""
    switch = environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
    return capture == "full" and switch.strip().lower() in _CAPTURE_ON


def client_conversation(body: Any) -> str | None:
    """``gen_ai.conversation.id``: the id the client itself gave its conversation, or None.

    The Responses ``conversation`` (a string or ``{"id": …}``); Claude Code's session in
    ``metadata.user_id`` (``user_…_account_…_session_<id>``, or a JSON object with a
    ``session_id``). Never a digest of the content: the conventions say an id the
    application did not send should not be made up (the repair log's key is
    ``toolcall_guard.conversation``)."""
    if type(body) is not dict:
        return None
    conversation = body.get("conversation")
    if type(conversation) is dict:
        conversation = conversation.get("id")
    if type(conversation) is str and conversation:
        return conversation[:256]
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if type(metadata) is dict else None
    if type(user_id) is not str:
        return None
    if user_id.startswith("{"):
        try:
            found = orjson.loads(user_id)
        except orjson.JSONDecodeError:
            return None
        session = found.get("session_id") if type(found) is dict else None
        return session[:256] if type(session) is str and session else None
    _, marker, session = user_id.rpartition("session_")
    return session[:256] if marker and session else None
