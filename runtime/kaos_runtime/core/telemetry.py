"""OpenTelemetry traces, configured by the standard OTEL_* variables.

On when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or
OTEL_SDK_DISABLED=false (what the agent chart renders when telemetry is enabled);
OTEL_SDK_DISABLED=true always turns it off (``settings.TelemetrySettings``). Spans are exported over OTLP/HTTP
(protobuf); the W3C `traceparent` header carries the trace to peers, so a delegation chain
is one trace. Off, every span is a shared no-op context: nothing is imported or allocated.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    from .settings import TelemetrySettings

log = logging.getLogger("kaos_runtime.telemetry")

_NO_SPAN = nullcontext()


class Telemetry:
    """What the runtime calls; a disabled instance does nothing."""

    def __init__(self, tracer=None, provider=None) -> None:
        self._tracer = tracer
        self._provider = provider
        if tracer is not None:
            from opentelemetry import propagate, trace

            self._propagate = propagate
            self._server_kind = trace.SpanKind.SERVER
            self._client_kind = trace.SpanKind.CLIENT
            self._error = trace.Status(trace.StatusCode.ERROR)

    @property
    def enabled(self) -> bool:
        return self._tracer is not None

    def server_span(self, name: str, headers: Mapping[str, str], attributes: dict):
        if self._tracer is None:
            return _NO_SPAN
        context = self._propagate.extract(dict(headers))
        return self._tracer.start_as_current_span(name, context=context, kind=self._server_kind,
                                                  attributes=attributes)

    def span(self, name: str, attributes: dict, client: bool = False):
        if self._tracer is None:
            return _NO_SPAN
        kind = self._client_kind if client else None
        if kind is None:
            return self._tracer.start_as_current_span(name, attributes=attributes)
        return self._tracer.start_as_current_span(name, kind=kind, attributes=attributes)

    def failed(self, span, message: str) -> None:
        if span is not None:
            span.set_status(self._error)
            span.set_attribute("kaos.error", message)

    def inject(self, headers: dict) -> dict:
        if self._tracer is not None:
            self._propagate.inject(headers)
        return headers

    def shutdown(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()


def setup_telemetry(settings: TelemetrySettings, service_name: str) -> Telemetry:
    if not settings.enabled:
        return Telemetry()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as error:
        log.warning("OTEL_* asks for telemetry but OpenTelemetry is not installed (%s); no traces", error)
        return Telemetry()
    if settings.protocol and settings.protocol != "http/protobuf":
        log.warning("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported; exporting with http/protobuf", settings.protocol)
    defaults = {} if settings.service_name else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(defaults))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    log.info("exporting traces over OTLP/HTTP")
    return Telemetry(provider.get_tracer("kaos_runtime"), provider)
