"""KubeRay RayCronJob (ray.io/v1): a RayJob from `spec.jobTemplate` on a cron `spec.schedule`; and
raypilot's scheduling settings beyond KubeRay, read from the `raypilot.io/schedule` annotation.

The annotation holds a YAML or JSON object with batch/v1 CronJob's names where they exist:

    raypilot.io/schedule: |
      # Allow (default, KubeRay's behaviour) | Forbid | Replace | BufferOne | BufferAll
      concurrencyPolicy: Forbid
      startingDeadlineSeconds: 300     # catch-up window after an outage (default: every missed tick)
      successfulJobsHistoryLimit: 3    # finished RayJobs kept (defaults 3 and 1, as batch/v1)
      failedJobsHistoryLimit: 1
      jitterSeconds: 30                # a run starts up to this much after its tick (named after the tick)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from pydantic import Field

from models.base import SpecModel, Time
from models.raycluster import RayObject
from models.rayjob import RayJobSpec
from models.yaml_annotation import annotation_object

__all__ = [
    "ANNOTATION_SCHEDULE",
    "ConcurrencyPolicy",
    "RayCronJob",
    "RayCronJobSpec",
    "RayCronJobStatus",
    "ScheduleSettings",
    "schedule_settings",
]

ANNOTATION_SCHEDULE: Final = "raypilot.io/schedule"
DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT: Final = 3
DEFAULT_FAILED_JOBS_HISTORY_LIMIT: Final = 1


class RayCronJobSpec(SpecModel):
    job_template: RayJobSpec
    schedule: str
    # None: the operator's local zone in KubeRay; raypilot's schedules use UTC then (README).
    time_zone: str | None = None
    suspend: bool | None = None


class RayCronJobStatus(SpecModel):
    last_schedule_time: Time | None = None


class RayCronJob(RayObject):
    kind: Literal["RayCronJob"] = "RayCronJob"
    spec: RayCronJobSpec
    status: RayCronJobStatus = Field(default_factory=RayCronJobStatus)


class ConcurrencyPolicy(StrEnum):
    """What a tick does while an earlier run still runs (batch/v1's three, plus the two buffers of
    kubernetes#79995)."""

    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"
    BUFFER_ONE = "BufferOne"
    BUFFER_ALL = "BufferAll"


@dataclass(frozen=True)
class ScheduleSettings:
    concurrency_policy: ConcurrencyPolicy = ConcurrencyPolicy.ALLOW
    starting_deadline_seconds: int | None = None
    successful_jobs_history_limit: int = DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT
    failed_jobs_history_limit: int = DEFAULT_FAILED_JOBS_HISTORY_LIMIT
    jitter_seconds: int = 0


_INTEGER_FIELDS: Final = {
    "startingDeadlineSeconds": "starting_deadline_seconds",
    "successfulJobsHistoryLimit": "successful_jobs_history_limit",
    "failedJobsHistoryLimit": "failed_jobs_history_limit",
    "jitterSeconds": "jitter_seconds",
}


def schedule_settings(annotations: dict[str, str]) -> ScheduleSettings:
    """The `raypilot.io/schedule` annotation read and checked; ValueError with a message naming the field."""
    loaded = annotation_object(annotations, ANNOTATION_SCHEDULE, "concurrencyPolicy: Forbid")
    if loaded is None:
        return ScheduleSettings()
    unknown = sorted(set(loaded) - {"concurrencyPolicy", *_INTEGER_FIELDS})
    if unknown:
        raise ValueError(f'{ANNOTATION_SCHEDULE}: unknown field "{unknown[0]}"')
    values: dict[str, Any] = {}
    policy = loaded.get("concurrencyPolicy", ConcurrencyPolicy.ALLOW.value)
    if policy not in {member.value for member in ConcurrencyPolicy}:
        choices = ", ".join(member.value for member in ConcurrencyPolicy)
        raise ValueError(f"{ANNOTATION_SCHEDULE}: concurrencyPolicy {policy!r} is not one of {choices}")
    values["concurrency_policy"] = ConcurrencyPolicy(policy)
    for field, attribute in _INTEGER_FIELDS.items():
        if field not in loaded:
            continue
        value = loaded[field]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{ANNOTATION_SCHEDULE}: {field} must be a non-negative integer, got {value!r}")
        values[attribute] = value
    return ScheduleSettings(**values)
