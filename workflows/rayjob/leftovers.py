"""No silent leaks, the workflow's side: a Warning Event and the `RayClusterLeftBehind` condition once a
finished RayJob's deletion policy matches none of its final state, and the condition turned False when
`raypilot.io/cleanup-after` deleted the cluster anyway. The decisions are in
`workflows.decisions.rayjob.leftovers`; the cleanup's timer and deletion run in the deletion part like any
other deletion step.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.meta import with_condition_replaced
    from models.rayjob import DeletionPolicyType
    from workflows.decisions.rayjob.events import EventReason, RayJobEvent
    from workflows.decisions.rayjob.leftovers import (
        LEFT_BEHIND_CONDITION,
        cluster_left_behind,
        left_behind_condition,
    )

from workflows.rayjob.core import RayJobCore


def report_left_behind(core: RayJobCore) -> None:
    """Once per run, when it finished: the Warning Event and condition if its cluster is left behind."""
    state = core.state
    if state.leftover_reported:
        return
    state.leftover_reported = True
    left = cluster_left_behind(core.job, core.config)
    if left is None:
        return
    message = left.message(core.namespace)
    workflow.logger.warning("RayJob %s/%s: %s", core.namespace, core.name, message)
    core.record(RayJobEvent("Warning", EventReason.RAYCLUSTER_LEFT_BEHIND, message))
    condition = left_behind_condition(left, core.namespace, workflow.now())
    core.update_status(conditions=with_condition_replaced(core.status.conditions, condition))


def note_cleanup(core: RayJobCore, action: DeletionPolicyType) -> None:
    """After a DeleteCluster of a cluster reported as left behind: the condition says it is gone."""
    if action != DeletionPolicyType.DELETE_CLUSTER or not any(
        condition.type == LEFT_BEHIND_CONDITION and condition.status == "True"
        for condition in core.status.conditions
    ):
        return
    left = cluster_left_behind(core.job, core.config)
    if left is None:
        return
    condition = left_behind_condition(left, core.namespace, workflow.now(), cleaned_up=True)
    core.update_status(conditions=with_condition_replaced(core.status.conditions, condition))
