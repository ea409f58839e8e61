"""The search attributes of docs/contract.md §4, for Web UI filtering and `temporal workflow list --query`.

Workflows set RayKind/RayNamespace/RayName at start (free) and upsert RayPhase only when the phase changes
(each upsert is a billable action).
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

RAY_KIND = SearchAttributeKey.for_keyword("RayKind")
RAY_NAMESPACE = SearchAttributeKey.for_keyword("RayNamespace")
RAY_NAME = SearchAttributeKey.for_keyword("RayName")
RAY_PHASE = SearchAttributeKey.for_keyword("RayPhase")
# On the RayJobs a RayCronJob made: the RayCronJob's name (its namespace is RayNamespace).
RAY_CRONJOB = SearchAttributeKey.for_keyword("RayCronJob")

ALL_SEARCH_ATTRIBUTES: tuple[SearchAttributeKey[str], ...] = (
    RAY_KIND,
    RAY_NAMESPACE,
    RAY_NAME,
    RAY_PHASE,
    RAY_CRONJOB,
)

# Memo of a RayJob run that stands for a raypilot.io object: its status' jobStatus, upserted when it
# changes. The controller reads it from the same visibility list as RayPhase, so a change within a phase
# (PENDING -> RUNNING -> SUCCEEDED while Running) reaches `kubectl get`.
MEMO_JOB_STATUS = "raypilot.io/job-status"
# Memo of the same runs: the submission id and DriverLogSaved reason of the last failed attempt's saved driver
# log (docs/logs.md), which comes after the Failed it follows and changes no printer column: listed beside
# the phase, it makes the controller read and write the status that holds it.
MEMO_DRIVER_LOG = "raypilot.io/driver-log"
