"""The OpenTelemetry SDK set up from the standard ``OTEL_*`` variables: a tracer whose spans go
out through a batch processor, and the GenAI client metrics. Imported only when tracing is on
(:func:`proxy.telemetry.tracing_from_env`).

The exporter reads its own variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` and
``…_TRACES_ENDPOINT``, ``…_HEADERS``, ``…_TIMEOUT``, ``…_PROTOCOL``: ``http/protobuf`` by
default, ``grpc`` when that exporter is installed); the sampler its own (``OTEL_TRACES_SAMPLER``
and ``…_ARG``); the resource ``OTEL_RESOURCE_ATTRIBUTES`` and ``OTEL_SERVICE_NAME``
(``toolcall-guard`` by default). Nothing global is set: the proxy's provider is its own, so an
application embedding it keeps its own.

A request never waits on the exporter: its spans are queued by the batch processor as one
item (a full queue drops them, it does not block; ``OTEL_BSP_*`` sizes count requests) and
exported by its thread, over OTLP/HTTP by :mod:`proxy.telemetry.otlp`'s encoder; a failing or
hanging collector costs that thread its export timeout, never a request.

Metrics (``gen_ai.client.operation.duration`` in seconds and ``gen_ai.client.token.usage`` in
tokens, with the conventions' bucket boundaries, cumulative) are aggregated by
:mod:`proxy.telemetry.histograms` and go out through the SDK's OTLP metric exporter every
``OTEL_METRIC_EXPORT_INTERVAL`` when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``…_METRICS_ENDPOINT``
is set, beside ``/metrics``.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from proxy.api.state import RequestState
from proxy.core.wire import Wire
from proxy.settings import Settings
from proxy.telemetry.histograms import Exporting, Histograms
from proxy.telemetry.names import METRICS_ENDPOINTS, content_captured, provider_name, wanted
from proxy.telemetry.otlp import FastSpanExporter, span_exporter
from proxy.telemetry.record import SCOPE, Finished, Readable, decided
from proxy.telemetry.spans import RequestTrace

LOGGER = logging.getLogger("toolcall_guard")


class Tracing:
    """The tracer, the metric instruments and what every request's spans share."""

    def __init__(
        self,
        settings: Settings,
        span_exporter: SpanExporter,
        metric_exporter: MetricExporter | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        name = environ.get("OTEL_SERVICE_NAME") or "toolcall-guard"
        resource = Resource.create({"service.name": name})
        # The provider reads the sampler from the environment; spans go to the processor
        # whole when they end (proxy.telemetry.record), not through its tracers.
        provider = TracerProvider(resource=resource)
        self.sampler, self.resource = provider.sampler, provider.resource
        self.fresh = decided(self.sampler, None)  # a new trace's fate, when the sampler is plain
        if isinstance(span_exporter, FastSpanExporter):
            span_exporter.begin(self.resource, SCOPE)
        else:  # an exporter of the SDK's: fed ReadableSpans
            span_exporter = Readable(span_exporter, self.resource)
        self.processor = BatchSpanProcessor(span_exporter)
        #: Where a request's spans are queued: the batch processor's queue itself (its
        #: ``on_end`` only checks that a span is sampled first, which a request's ended spans
        #: always are), or ``on_end`` where the installed SDK has no such queue.
        inner = getattr(self.processor, "_batch_processor", None)
        self.queue: Callable[[Any], None] = getattr(inner, "emit", None) or self.processor.on_end
        #: The GenAI client histograms (:mod:`proxy.telemetry.histograms`), None: not asked.
        self.histograms: Histograms | None = None
        self.exporting: Exporting | None = None
        if metric_exporter is not None:
            self.histograms = Histograms(resource, SCOPE)
            self.exporting = Exporting(self.histograms, metric_exporter)
        #: ``gen_ai.provider.name`` of each upstream, by its policy's dialect.
        self.providers = {
            n: provider_name(settings.policy_for(n).dialect) for n in settings.upstreams
        }
        self.content = content_captured(settings.repair_log.capture, environ)
        #: A CLIENT span's first attributes, by upstream, URL origin and wire API (see
        #: :meth:`attributes`).
        self.firsts: dict[tuple[str, str, str | None], dict[str, Any]] = {}
        #: A CLIENT span's name and first attributes, by upstream, origin, API and model (see
        #: :meth:`client`).
        self.clients: dict[tuple[str, ...], tuple[str, dict[str, Any]]] = {}

    def client(
        self, upstream: str, url: str, wire: Wire | None, model: str, method: str
    ) -> tuple[str, dict[str, Any]]:
        """A new CLIENT span's name (``{operation} {model}``, the method when no wire API
        serves it) and first attributes (:meth:`attributes`, ``gen_ai.request.model``); built
        once per upstream, URL origin, API and model, the attributes copied for each span."""
        end = url.find("/", url.find("//") + 2)
        origin = url if end < 0 else url[:end]  # not the query: a client's key may be there
        key = (
            (upstream, origin, wire.name, model) if wire is not None else (upstream, origin, method)
        )
        found = self.clients.get(key)
        if found is None:
            attrs = self.attributes(upstream, origin, wire)
            name = method
            if wire is not None:
                attrs["gen_ai.request.model"] = model
                name = f"{wire.operation} {model}" if model else wire.operation
            found = (name, attrs)
            if len(self.clients) < 1024:  # the config's URLs, the models clients name: few
                self.clients[key] = found
        return found[0], found[1].copy()

    def attributes(self, upstream: str, url: str, wire: Wire | None) -> dict[str, Any]:
        """A new CLIENT span's attributes: ``server.address``, ``server.port`` (its URL's),
        ``gen_ai.operation.name`` and ``gen_ai.provider.name`` (those of a wire API); built
        once per upstream, origin and API, copied for each span."""
        end = url.find("/", url.find("//") + 2)
        origin = url if end < 0 else url[:end]
        api = wire.name if wire is not None else None  # a Wire hashes every field: its name
        found = self.firsts.get((upstream, origin, api))
        if found is None:
            where = urlsplit(origin)
            port = where.port or (443 if where.scheme == "https" else 80)
            found = {"server.address": where.hostname or "", "server.port": port}
            if wire is not None:
                found["gen_ai.operation.name"] = wire.operation
                found["gen_ai.provider.name"] = self.providers.get(upstream, upstream)
            if len(self.firsts) < 1024:  # upstreams and origins are the config's: few
                self.firsts[upstream, origin, api] = found
        return found.copy()

    def emit(self, spans: Finished) -> None:
        """A request's spans ended: to the batch processor as one item (which drops it if its
        queue is full)."""
        if spans:
            self.queue(spans)  # exported as it is

    def force_flush(self) -> None:
        self.processor.force_flush()

    def start(self, state: RequestState) -> RequestTrace:
        """A request starts: its SERVER span."""
        return RequestTrace(self, state)

    def shutdown(self) -> None:
        """Flush what is queued (bounded by the exporters' timeouts) and stop."""
        try:
            self.processor.shutdown()  # type: ignore[no-untyped-call]
            if self.exporting is not None:
                self.exporting.shutdown()
        except Exception:  # an exporter failing at exit must not stop the proxy's exit
            LOGGER.warning("OpenTelemetry shutdown failed", exc_info=True)


def from_env(settings: Settings, environ: Mapping[str, str] = os.environ) -> Tracing:
    """The tracing the ``OTEL_*`` variables ask for (tracing is known to be on)."""
    metrics = _exporter("metric", environ) if wanted(METRICS_ENDPOINTS, environ) else None
    tracing = Tracing(settings, _exporter("span", environ), metrics, environ)
    LOGGER.info("OpenTelemetry tracing on (content %s)", "on" if tracing.content else "off")
    return tracing


def _exporter(signal: str, environ: Mapping[str, str]) -> Any:
    """The OTLP exporter of ``signal`` (``span`` or ``metric``) for the configured protocol:
    ``http/protobuf`` unless ``grpc`` is asked for and its exporter installed."""
    own = f"OTEL_EXPORTER_OTLP_{'TRACES' if signal == 'span' else 'METRICS'}_PROTOCOL"
    protocol = (environ.get(own) or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "")).strip()
    kind = "trace" if signal == "span" else "metric"
    name = "OTLPSpanExporter" if signal == "span" else "OTLPMetricExporter"
    if protocol == "grpc":
        try:
            grpc = importlib.import_module(
                f"opentelemetry.exporter.otlp.proto.grpc.{kind}_exporter"
            )
            return getattr(grpc, name)()
        except ImportError:
            LOGGER.warning("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: exporter not installed; using http")
    if signal == "span":
        return span_exporter()
    http = importlib.import_module(f"opentelemetry.exporter.otlp.proto.http.{kind}_exporter")
    return getattr(http, name)()
