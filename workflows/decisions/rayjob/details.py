"""What the Web UI shows of a RayJob: the workflow's current details."""

from __future__ import annotations

from models.rayjob import RayJobStatus


def phase_details(status: RayJobStatus) -> str:
    """The Web UI's current details: phase, Ray job id and cluster (markdown)."""
    phase = status.job_deployment_status.value or "New"
    parts = [f"**{phase}**"]
    if status.job_status:
        parts.append(f"job status {status.job_status.value}")
    if status.job_id:
        parts.append(f"job id `{status.job_id}`")
    if status.ray_cluster_name:
        parts.append(f"cluster `{status.ray_cluster_name}`")
    if status.reason is not None:
        parts.append(f"reason {status.reason.value}")
    return " · ".join(parts)
