"""Operator-wide settings, KubeRay's environment variables and feature gates, as one value.

The worker reads the environment once per workflow (through an activity, so the value is recorded in
history and replays identically) and the workflow carries the result. Parsing follows KubeRay's
rules for each variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict

from models.features import FEATURE_GATES_ENV, FeatureGates, parse_feature_gates
from models.notify_default import NotifyDefault, notify_default_from_env

DEFAULT_TRANSITION_GRACE_SECONDS = 300
DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS = 300
DEFAULT_CLUSTER_DOMAIN = "cluster.local"

JOB_OBSERVER_ENV = "RAYPILOT_JOB_OBSERVER"
# Where the worker keeps full driver logs (activities/log_store.py reads it; docs/logs.md).
LOG_STORE_ENV: Final = "RAYPILOT_LOG_STORE"


class OperatorConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    feature_gates: FeatureGates = FeatureGates()
    # ENABLE_ZERO_DOWNTIME: "false" (any case) turns NewCluster upgrades off when
    # upgradeStrategy.type is unset.
    enable_zero_downtime: bool = True
    # DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: shutdownAfterJobFinishes then deletes the RayJob itself.
    delete_rayjob_after_job_finishes: bool = False
    # RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS
    job_transition_grace_seconds: int = DEFAULT_TRANSITION_GRACE_SECONDS
    # RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
    job_status_check_timeout_seconds: int = DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN
    # RAYPILOT_JOB_OBSERVER (raypilot): RayJobs wait on their namespace's observer instead of one polling wait
    # activity each, unless it is "false". False here (not the environment's default) means a configuration
    # recorded before this field existed decodes as the runs that recorded it worked.
    job_observer: bool = False
    # RAYPILOT_NOTIFY (raypilot): the raypilot.io/notify of every object without the annotation (None: none).
    # It names a Secret, never the URL, so it may be recorded in history with the rest of this value.
    notify: NotifyDefault | None = None
    # RAYPILOT_LOG_STORE (raypilot) is set: the driver log of every ended attempt, succeeded too, is kept in
    # the log store before its cluster goes (without a store only failed attempts save their last lines).
    keeps_driver_logs: bool = False


def operator_config_from_env(env: Mapping[str, str]) -> OperatorConfig:
    """Raises ValueError only for RAYPILOT_FEATURE_GATES and RAYPILOT_NOTIFY (a typo there must not pass
    silently); the KubeRay variables fall back to their defaults exactly where KubeRay's do."""
    return OperatorConfig(
        feature_gates=parse_feature_gates(env.get(FEATURE_GATES_ENV, "")),
        enable_zero_downtime=env.get("ENABLE_ZERO_DOWNTIME", "").lower() != "false",
        delete_rayjob_after_job_finishes=env.get("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "").lower() == "true",
        job_transition_grace_seconds=_go_atoi(
            env.get("RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS"),
            DEFAULT_TRANSITION_GRACE_SECONDS,
        ),
        job_status_check_timeout_seconds=_positive_or_default(
            env.get("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"), DEFAULT_STATUS_CHECK_TIMEOUT_SECONDS
        ),
        cluster_domain=env.get("CLUSTER_DOMAIN", "").strip() or DEFAULT_CLUSTER_DOMAIN,
        job_observer=env.get(JOB_OBSERVER_ENV, "").strip().lower() != "false",
        notify=notify_default_from_env(env),
        keeps_driver_logs=bool(env.get(LOG_STORE_ENV, "").strip()),
    )


def _go_atoi(value: str | None, default: int) -> int:
    """KubeRay uses strconv.Atoi: an unparsable value means the default, a negative one is kept."""
    if value is None:
        return default
    text = value  # strconv.Atoi does not trim: " 120" is a parse error there too
    digits = text[1:] if text[:1] in "+-" else text
    return int(text) if digits.isdigit() and digits.isascii() else default


def _positive_or_default(value: str | None, default: int) -> int:
    parsed = _go_atoi(value, default)
    return parsed if parsed > 0 else default
