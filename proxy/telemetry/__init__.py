"""OpenTelemetry traces and metrics in the GenAI semantic conventions (issue 36), off by default.

On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (and the
``toolcall-guard[otel]`` extra installed); then :func:`tracing_from_env` builds the SDK
(:mod:`proxy.telemetry.otel`) and each request gets a
:class:`~proxy.telemetry.spans.RequestTrace`. Off, this module imports nothing of the SDK and
the request path pays one ``is None`` test per hook.

Names checked with the conventions (status: Development) before coding: spans and attributes
(``gen_ai.operation.name``, ``gen_ai.provider.name``, which replaced ``gen_ai.system``;
``gen_ai.request.model``, ``gen_ai.response.model``/``.id``/``.finish_reasons``,
``gen_ai.usage.input_tokens``/``output_tokens``, ``gen_ai.conversation.id``,
``gen_ai.input.messages``/``output.messages``/``system_instructions``) in
opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans and the
open-telemetry/semantic-conventions-genai registry; metrics ``gen_ai.client.operation.duration``
(s) and ``gen_ai.client.token.usage`` (``{token}``, by ``gen_ai.token.type``) with their
explicit bucket boundaries in gen-ai-metrics; content capture behind
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``true``, or the newer ``SPAN_ONLY`` /
``SPAN_AND_EVENT`` of opentelemetry-util-genai), off by default.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from proxy.telemetry.names import TRACES_ENDPOINTS, wanted

if TYPE_CHECKING:
    from proxy.settings import Settings
    from proxy.telemetry.otel import Tracing

LOGGER = logging.getLogger("toolcall_guard")


def tracing_from_env(settings: Settings, environ: Mapping[str, str] = os.environ) -> Tracing | None:
    """The tracing the standard variables ask for, or None (off: nothing imported)."""
    if not wanted(TRACES_ENDPOINTS, environ):
        return None
    try:
        from proxy.telemetry.otel import from_env
    except ImportError as exc:
        LOGGER.warning(
            "%s is set but OpenTelemetry is not installed (pip install 'toolcall-guard[otel]'): "
            "tracing stays off (%s)",
            " or ".join(TRACES_ENDPOINTS),
            exc,
        )
        return None
    return from_env(settings, environ)
