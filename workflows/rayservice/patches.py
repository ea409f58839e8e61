"""The RayService workflow's patches (`workflow.patched`): each guards a change of the workflow's commands, so
that runs started before it replay without it. Asked when a run starts, before any command
(`RayServiceWorkflow.run`).
"""

from __future__ import annotations

from typing import Final

# Patches (workflow.patched), asked when a run starts, before any command: runs started before them replay
# without them. With strategy None a cluster spec change is no longer applied in place: the cluster is left
# alone as in KubeRay, with the ClusterSpecNotApplied condition and a Warning Event.
NONE_NOT_APPLIED_PATCH: Final = "rayservice-none-not-applied"
# During an incremental rollback the active cluster keeps its Serve config: a third spec's goes only to the
# cluster prepared after the rollback (serve.serve_config_for_cluster).
ROLLBACK_KEEPS_ACTIVE_CONFIG_PATCH: Final = "rayservice-rollback-keeps-active-serve-config"
# raypilot.io/rollout: an incremental upgrade walks the annotation's step plan (rayservice/rollout.py).
ROLLOUT_PLAN_PATCH: Final = "rayservice-rollout-plan"
# A dangling cluster whose deletion delay has passed is deleted only once its Serve proxies have no request in
# flight, or after raypilot.io/max-drain-seconds (decisions/rayservice/drain.py); without it, as before.
DRAINED_DELETION_PATCH: Final = "rayservice-drained-deletion"
# The Serve health wait heartbeats once a minute (3 min heartbeat timeout, IO.QUIET_WATCH in
# workflows/kit/calls.py): an idle RayService ~1,450 actions a day instead of ~43,000. A cancellation reaches
# it at its next heartbeat, so `delete` deletes the owned objects first and confirms the waits' cancellation
# while the clusters go.
SERVE_WAIT_MINUTE_HEARTBEAT_PATCH: Final = "rayservice-serve-wait-minute-heartbeat"
# raypilot.io/rollout: the measured analysis gates (http, prometheus) run and judge (rayservice/gates.py);
# without it their steps are skipped, as before.
ANALYSIS_GATES_PATCH: Final = "rayservice-analysis-gates"
# A drain starts with the old cluster's Serve proxies closing kept-alive connections after their responses.
DRAIN_CLOSES_CONNECTIONS_PATCH: Final = "rayservice-drain-closes-connections"
# Revision history and `undo` (rayservice/revisions.py): the spec of each pass is recorded, and an in-place
# undo makes the previous, still running cluster the pending one again.
REVISION_UNDO_PATCH: Final = "rayservice-revision-undo"
# raypilot.io/rollout headerCanary: the HTTPRoute of an incremental upgrade gains the header rule.
HEADER_CANARY_PATCH: Final = "rayservice-header-canary"
# While the desired spec is an aborted one, the active cluster keeps its Serve config (aborted_spec.py).
ABORTED_SPEC_SERVE_CONFIG_PATCH: Final = "rayservice-aborted-spec-keeps-serve-config"
# Every patch above, folded into one (workflows/kit/patches.py): a new run asks only this one (2 history
# events instead of 20 in each run, continue-as-new included); a run recorded before it replays through the
# individual patches.
BASELINE_PATCH: Final = "rayservice-baseline-2026-11"
FOLDED_PATCHES: Final = frozenset(
    {
        NONE_NOT_APPLIED_PATCH,
        ROLLBACK_KEEPS_ACTIVE_CONFIG_PATCH,
        ROLLOUT_PLAN_PATCH,
        DRAINED_DELETION_PATCH,
        SERVE_WAIT_MINUTE_HEARTBEAT_PATCH,
        ANALYSIS_GATES_PATCH,
        DRAIN_CLOSES_CONNECTIONS_PATCH,
        REVISION_UNDO_PATCH,
        HEADER_CANARY_PATCH,
        ABORTED_SPEC_SERVE_CONFIG_PATCH,
    }
)
# After the baseline: a roll of Pods in place (raypilot.io/in-place-restart) and a drain before deletion
# (raypilot.io/max-drain-seconds) wait for what they decide on to change instead of a timer and a read
# every 2 s / 6 s (rayservice/pod_restart.py, rayservice/drain.py).
WAITS_NOT_POLLS_PATCH: Final = "rayservice-waits-not-polls"
# A deleted RayService completes without waiting until its waits' cancellations are recorded. A wait lost with
# a crashed worker is recorded cancelled only at its heartbeat timeout (3 min for the quiet Serve wait), which
# held the deletion that long; a wait left running on a live worker learns at its next heartbeat that its run
# has closed, and stops. (Continue-as-new still confirms them: on the time-skipping test server a run that
# continued as new with unconfirmed cancellations stopped time from being skipped.)
DELETE_WITHOUT_CONFIRMING_WAITS_PATCH: Final = "rayservice-delete-without-confirming-waits"
