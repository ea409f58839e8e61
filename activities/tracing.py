"""One OpenTelemetry span per Kubernetes, Gateway or dashboard call: each activity does one I/O thing, so a
worker interceptor opens `"<kind> <activity>"` (e.g. `kubernetes k8s.create_raycluster`) inside the SDK's
`RunActivity` span, with the kind of I/O and, when the call failed, the error type and HTTP status
(`activities.metrics.activity_error_point` reads them). Without a tracer provider the spans cost nothing.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer
from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from activities.metrics import NO_STATUS, activity_error_point


class _CallSpans(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, tracer: Tracer) -> None:
        super().__init__(next)
        self._tracer = tracer

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        activity_type = activity.info().activity_type
        kind = activity_type.partition(".")[0]
        with self._tracer.start_as_current_span(
            f"{kind} {activity_type}",
            kind=trace.SpanKind.CLIENT,
            attributes={"raypilot.activity": activity_type, "raypilot.io": kind},
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                return await self.next.execute_activity(input)
            except Exception as error:
                labels = activity_error_point(activity_type, error).labels
                span.set_attribute("error.type", labels["error_type"])
                if labels["http_status"] != NO_STATUS:
                    span.set_attribute("http.response.status_code", int(labels["http_status"]))
                # The exception's message is left out: the span must not carry what a message might hold.
                span.set_status(Status(StatusCode.ERROR, labels["error_type"]))
                raise


class ActivityCallSpans(Interceptor):
    """Worker interceptor: a span per activity, i.e. per Kubernetes, Gateway or dashboard call."""

    def __init__(self, tracer: Tracer | None = None) -> None:
        self._tracer = tracer or trace.get_tracer(__name__)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _CallSpans(next, self._tracer)
