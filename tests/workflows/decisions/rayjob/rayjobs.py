"""The RayJob the RayJob decision tests decide about (named rj, built from a spec, a status and annotations),
one that finished at END, and the operator settings the decisions run under."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from models.operator import OperatorConfig
from models.rayjob import RayJob

CONFIG = OperatorConfig()
"""The operator's defaults: what a decision runs under unless a test sets its own."""

END = datetime(2025, 8, 1, 10, 0, 0, tzinfo=UTC)
"""When a `finished_job` finished (its status.endTime)."""


def rayjob(
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> RayJob:
    """The RayJob rj with that spec, status and annotations (each empty unless given)."""
    metadata = {"name": "rj", "annotations": annotations or {}}
    return RayJob.model_validate({"metadata": metadata, "spec": spec or {}, "status": status or {}})


def finished_job(
    spec: dict[str, Any],
    job_status: str = "SUCCEEDED",
    deployment: str = "Complete",
    *,
    end: datetime | None = END,
    reason: str | None = None,
    cluster: str | None = None,
    annotations: dict[str, str] | None = None,
) -> RayJob:
    """rj in that final state, ended at `end` (None: no endTime), with `reason` and its cluster's name in the
    status where given."""
    status: dict[str, Any] = {"jobStatus": job_status, "jobDeploymentStatus": deployment}
    if end is not None:
        status["endTime"] = end.isoformat()
    if reason is not None:
        status["reason"] = reason
    if cluster is not None:
        status["rayClusterName"] = cluster
    return rayjob(spec, status, annotations)
