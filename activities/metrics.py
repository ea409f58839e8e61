"""Activity errors as metrics: every failed activity attempt counted by kind of I/O (Kubernetes, dashboard,
gateway, Temporal), activity, error type and HTTP status, through the SDK's activity metric meter.

A worker interceptor does it, so no activity changes: the kind is the prefix of the activity's name
(`wire.names`), the error type that of the `ApplicationError` (`activities.errors`), and the HTTP status the
one `activities.errors.http_error` puts in its message ("<what>: HTTP <status>: ...").
"""

from __future__ import annotations

import re
from typing import Any, Final

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
)

from wire.metrics import ACTIVITY_ERRORS, SPECS, MetricPoint

_KINDS: Final = {"k8s": "kubernetes", "dashboard": "dashboard", "gateway": "gateway", "temporal": "temporal"}
_HTTP_STATUS: Final = re.compile(r": HTTP (\d{3})\b")
NO_STATUS: Final = "none"


def activity_error_point(activity_type: str, error: BaseException) -> MetricPoint:
    """The point one failed attempt of `activity_type` records (pure)."""
    kind = _KINDS.get(activity_type.partition(".")[0], "other")
    if isinstance(error, ApplicationError):
        error_type = error.type or "ApplicationError"
    else:
        error_type = type(error).__name__
    found = _HTTP_STATUS.search(str(error))
    labels = {
        "kind": kind,
        "activity": activity_type,
        "error_type": error_type,
        "http_status": found.group(1) if found else NO_STATUS,
    }
    return MetricPoint(ACTIVITY_ERRORS, 1, labels)


class _CountErrors(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        try:
            return await self.next.execute_activity(input)
        except Exception as error:
            point = activity_error_point(activity.info().activity_type, error)
            spec = SPECS[point.name]
            activity.metric_meter().create_counter(spec.name, spec.description).add(1, dict(point.labels))
            raise


class ActivityErrorMetrics(Interceptor):
    """Worker interceptor counting failed activity attempts (`raypilot_activity_errors`)."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _CountErrors(next)
