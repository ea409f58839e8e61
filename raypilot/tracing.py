"""Tracing with OpenTelemetry, off by default: on when the standard variables ask for it.

`OTEL_TRACES_EXPORTER=otlp` (or any `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
exports over OTLP/HTTP to that endpoint, `OTEL_TRACES_EXPORTER=console` prints spans; `OTEL_SDK_DISABLED=true`
or `OTEL_TRACES_EXPORTER=none` turns it off. `OTEL_SERVICE_NAME` names the service (`raypilot`), and the
exporter reads its other `OTEL_EXPORTER_OTLP_*` settings itself.

Once on, the client of the CLI and of the worker carries the SDK's `TracingInterceptor`
(`temporalio.contrib.opentelemetry`): `raypilot apply` starts a trace that follows the workflow (its context
travels in Temporal headers) into every activity it runs, where `activities.tracing` adds a span per
Kubernetes, Gateway or dashboard call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from temporalio.client import Interceptor as ClientInterceptor
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.worker import Interceptor as WorkerInterceptor

from activities.tracing import ActivityCallSpans

TRACER_NAME: Final = "raypilot"
_OTLP_ENDPOINTS: Final = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")

_provider: TracerProvider | None = None


def traces_exporter(env: Mapping[str, str]) -> str | None:
    """`otlp`, `console` or None (off), from the standard variables."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    chosen = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if chosen in ("otlp", "console"):
        return chosen
    if chosen == "" and any(env.get(name, "").strip() for name in _OTLP_ENDPOINTS):
        return "otlp"
    if chosen not in ("", "none"):
        raise ValueError(f"OTEL_TRACES_EXPORTER={chosen!r}: raypilot exports traces with otlp or console")
    return None


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def tracer_provider(env: Mapping[str, str]) -> TracerProvider | None:
    """The process's tracer provider, made on first use when the environment turns tracing on."""
    global _provider
    if _provider is None:
        exporter = traces_exporter(env)
        if exporter is None:
            return None
        service = env.get("OTEL_SERVICE_NAME", "").strip() or TRACER_NAME
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(BatchSpanProcessor(_exporter(exporter)))
        _provider = provider
    return _provider


def use_tracer_provider(provider: TracerProvider | None) -> None:
    """Sets (or with None, forgets) the provider, e.g. one with an in-memory exporter in a test."""
    global _provider
    _provider = provider


def client_interceptors(env: Mapping[str, str]) -> Sequence[ClientInterceptor]:
    """The SDK's tracing interceptor for a client (and the workers made with it), when tracing is on."""
    provider = tracer_provider(env)
    return [TracingInterceptor(provider.get_tracer(TRACER_NAME))] if provider is not None else []


def worker_interceptors(env: Mapping[str, str]) -> Sequence[WorkerInterceptor]:
    """The span per Kubernetes, Gateway or dashboard call, when tracing is on."""
    provider = tracer_provider(env)
    return [ActivityCallSpans(provider.get_tracer(TRACER_NAME))] if provider is not None else []


def shutdown_tracing() -> None:
    """Sends the spans still buffered (at the end of a CLI command or the worker)."""
    if _provider is not None:
        _provider.force_flush()
