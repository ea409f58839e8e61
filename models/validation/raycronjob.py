"""RayCronJob validation with KubeRay's messages (utils/validation.go ValidateRayCronJobSpec), in its order:
the name bound, TZ in the schedule, the schedule itself (robfig/cron ParseStandard), the time zone, then the
jobTemplate as a RayJob spec (ValidateRayJobSpec, prefixed `invalid RayJob template: `). The feature gate
comes first: with `RayCronJob` off, KubeRay runs no controller for it at all."""

from __future__ import annotations

import zoneinfo
from typing import Final

from models.cron import CronError, parse_standard
from models.features import FeatureGates
from models.formats import dns1123_subdomain_errors, go_quote
from models.meta import ObjectMeta
from models.naming import MAX_RAYJOB_NAME_LENGTH
from models.raycronjob import RayCronJob, schedule_settings
from models.rayjob import RayJob
from models.validation.rayjob import rayjob_crd_error, validate_rayjob_spec

__all__ = [
    "GATE_OFF",
    "MAX_RAYCRONJOB_NAME_LENGTH",
    "time_zone_error",
    "validate_raycronjob",
]

# Room for "-<unix minutes>" (11 characters) in the child RayJob's name.
MAX_RAYCRONJOB_NAME_LENGTH: Final = MAX_RAYJOB_NAME_LENGTH - 11
GATE_OFF: Final = (
    "RayCronJob is behind the RayCronJob feature gate, which is off: remove RayCronJob=false from "
    "RAYPILOT_FEATURE_GATES (or set RayCronJob=true) to turn it on"
)
_DEFAULT_GATES = FeatureGates()


def time_zone_error(name: str) -> str | None:
    """Go's time.LoadLocation for an IANA name (the operator embeds the time zone database)."""
    if name in ("UTC", "Local"):
        return None
    try:
        zoneinfo.ZoneInfo(name)
    except zoneinfo.ZoneInfoNotFoundError:
        return f"unknown time zone {name}"
    except ValueError:  # an absolute path, "..", or another name that is not a key of the database
        return "time: invalid location name"
    return None


def validate_raycronjob(cronjob: RayCronJob, gates: FeatureGates = _DEFAULT_GATES) -> str | None:
    """Everything KubeRay (CRD rules, gate, then ValidateRayCronJobSpec) would reject, first error only;
    then the `raypilot.io/schedule` annotation."""
    name_errors = dns1123_subdomain_errors(cronjob.metadata.name)
    if name_errors:
        # The API server's check of every custom resource's name.
        return f"metadata.name: Invalid value: {go_quote(cronjob.metadata.name)}: {name_errors[0]}"
    spec = cronjob.spec
    # KubeRay validates a RayJob with only the template as its spec (no name, no annotations).
    template = RayJob(metadata=ObjectMeta(), spec=spec.job_template)
    # The CRD's CEL rules on the template: the API server refuses the object before any controller runs.
    cel_error = rayjob_crd_error(template)
    if cel_error is not None:
        return cel_error
    if not gates.ray_cron_job:
        return GATE_OFF
    if len(cronjob.metadata.name) > MAX_RAYCRONJOB_NAME_LENGTH:
        return f"RayCronJob name should be no more than {MAX_RAYCRONJOB_NAME_LENGTH} characters"
    if "TZ" in spec.schedule:
        return "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    try:
        parse_standard(spec.schedule)
    except CronError as error:
        return f"invalid cron schedule: {error}"
    if spec.time_zone is not None:
        if spec.time_zone == "":
            return (
                "timeZone must not be empty string, omit the field to use the local time zone of the "
                "KubeRay operator"
            )
        problem = time_zone_error(spec.time_zone)
        if problem is not None:
            return f"invalid time zone: {problem}"
    template_error = validate_rayjob_spec(template, gates)
    if template_error is not None:
        return f"invalid RayJob template: {template_error}"
    try:
        schedule_settings(cronjob.metadata.annotations)
    except ValueError as problem:
        return str(problem)
    return None
