"""Analysis gates of `raypilot.io/rollout` step plans (issue #18): the verdict of one analysis, and the
rollback when a gate fails. raypilot's own.

Provider 3, `serveStatus`, judges the Serve applications of the new cluster as the workflow last observed
them (the status' pendingServiceStatus.applicationStatuses, read by the Serve wait activity): every listed
application (all, without a list) RUNNING passes; any DEPLOY_FAILED or UNHEALTHY fails; anything else (not
reported yet, DEPLOYING) waits. The `http` and `prometheus` providers are measured by activities and
judged in gates.py, never here: given one, this says it was skipped (AnalysisSkipped). A failed gate rolls
back as the `abort` control does, with reason AnalysisFailed, a Warning Event and the measured values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from models.meta import ConditionStatus
from models.rayservice import AppStatus, RayServiceStatuses
from models.rollout import Analysis
from workflows.decisions.rayservice.conditions import RayServiceEvent, with_condition
from workflows.decisions.rayservice.upgrade.automatic_rollback import (
    automatic_rollback_controls,
    rollback_in_progress,
)
from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
from workflows.decisions.rayservice.upgrade.unhealthy import UNHEALTHY_APP_STATUSES

__all__ = [
    "REASON_ANALYSIS_FAILED",
    "ROLLOUT_ANALYSIS_CONDITION",
    "AnalysisResult",
    "analysis_failed",
    "analysis_result",
    "with_analysis_condition",
]

ROLLOUT_ANALYSIS_CONDITION: Final = "RolloutAnalysis"
REASON_ANALYSIS_FAILED: Final = "AnalysisFailed"
Verdict = Literal["pass", "fail", "pending", "skipped"]


@dataclass(frozen=True)
class AnalysisResult:
    name: str
    verdict: Verdict
    values: str  # what was measured, e.g. "app=RUNNING, other=DEPLOY_FAILED"


def analysis_result(analysis: Analysis, applications: Mapping[str, AppStatus]) -> AnalysisResult:
    check = analysis.serve_status
    if check is None:
        provider = "http" if analysis.http is not None else "prometheus"
        return AnalysisResult(analysis.name, "skipped", f"the {provider} provider is not run yet")
    names = sorted(applications) if check.applications is None else list(check.applications)
    states = {name: applications[name].status if name in applications else "NOT_REPORTED" for name in names}
    values = ", ".join(f"{name}={state}" for name, state in states.items()) or "no applications reported"
    if any(state in UNHEALTHY_APP_STATUSES for state in states.values()):
        return AnalysisResult(analysis.name, "fail", values)
    if states and all(state == "RUNNING" for state in states.values()):
        return AnalysisResult(analysis.name, "pass", values)
    return AnalysisResult(analysis.name, "pending", values)


def with_analysis_condition(
    status: RayServiceStatuses, result: AnalysisResult, now: datetime
) -> RayServiceStatuses:
    """The raypilot condition RolloutAnalysis: the last analysis run, its verdict and values."""
    value = {"pass": ConditionStatus.TRUE, "skipped": ConditionStatus.TRUE, "fail": ConditionStatus.FALSE}
    reasons = {"pass": "AnalysisPassed", "skipped": "AnalysisSkipped", "fail": REASON_ANALYSIS_FAILED}
    message = f"analysis {result.name}: {result.verdict} ({result.values})"
    return with_condition(
        status,
        ROLLOUT_ANALYSIS_CONDITION,
        value.get(result.verdict, ConditionStatus.UNKNOWN),
        reasons.get(result.verdict, "AnalysisRunning"),
        message,
        now,
    )


def analysis_failed(
    status: RayServiceStatuses, result: AnalysisResult, goal_hash: str, now: datetime
) -> tuple[UpgradeControls, RayServiceStatuses, RayServiceEvent]:
    """A failed gate: roll back (RollbackInProgress, reason AnalysisFailed) with a Warning Event."""
    cluster = status.pending_service_status.ray_cluster_name
    message = (
        f"Analysis {result.name} failed on RayCluster {cluster} ({result.values}); "
        "rolling back to the active cluster."
    )
    failed = rollback_in_progress(
        with_analysis_condition(status, result, now), REASON_ANALYSIS_FAILED, message, now
    )
    event = RayServiceEvent("Warning", REASON_ANALYSIS_FAILED, message)
    return automatic_rollback_controls(goal_hash), failed, event
