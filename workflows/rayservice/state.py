"""The RayService workflow's state: one dataclass, carried whole through continue-as-new.

Everything a later run needs lives here: the desired manifest (the newest accepted one, which may not be acted
on yet), its generation, the KubeRay status (conditions with their transition times, cluster names, traffic
and capacity), the Serve config last applied per cluster, the deletion time of each dangling cluster, the
clusters the workflow created, which cluster the RayService-level Services select, the upgrade controls, and
the last Serve details per cluster (the replicas shown by the `status` query).

Observations of the world (RayCluster objects, Serve views, endpoint counts) are not state: a new run reads
them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.rayservice import RayServiceStatuses
    from wire.nexus import UpgradeWatch
    from wire.notify import NotifyBook
    from workflows.decisions.rayservice.pod_restart import PodRestart
    from workflows.decisions.rayservice.upgrade.blue_green import PostPromotion
    from workflows.decisions.rayservice.upgrade.controls import UpgradeControls
    from workflows.decisions.rayservice.upgrade.gates import GateRun
    from workflows.decisions.rayservice.upgrade.revisions import Revision
    from workflows.decisions.rayservice.upgrade.step_deadline import StepClock
    from workflows.decisions.rayservice.upgrade.step_plan import StepProgress

__all__ = ["RayServiceState"]


@dataclass
class RayServiceState:
    manifest: dict[str, Any]
    generation: int = 1
    status: RayServiceStatuses = field(default_factory=RayServiceStatuses)
    serve_config_cache: dict[str, str] = field(default_factory=dict)
    deletion_schedule: dict[str, datetime] = field(default_factory=dict)
    owned_clusters: list[str] = field(default_factory=list)
    # Drained deletion: when each dangling cluster's drain began (its deletion delay ended) and
    # how many zero in-flight readings it had in a row (decisions/rayservice/drain.py: Drain).
    drain_started: dict[str, datetime] = field(default_factory=dict)
    drain_quiet_reads: dict[str, int] = field(default_factory=dict)
    # The cluster `<rs>-head-svc` and `<rs>-serve-svc` select ("" until they exist).
    services_cluster: str = ""
    # Incremental upgrades: the per-cluster serve Services created so far, and whether the Gateway exists.
    per_cluster_services: list[str] = field(default_factory=list)
    gateway_created: bool = False
    serve_details: dict[str, dict[str, Any]] = field(default_factory=dict)
    controls: UpgradeControls = field(default_factory=UpgradeControls)
    # raypilot.io/in-place-restart: the roll of the active cluster's Pods in progress, and its last progress.
    pod_restart: PodRestart | None = None
    pod_restart_message: str = ""
    # raypilot.io/rollout: where the upgrade is in its step plan.
    rollout_progress: StepProgress | None = None
    # raypilot.io/rollout steps[].mirror: the percent of the requests mirrored to the pending cluster now.
    rollout_mirror: int = 0
    # raypilot.io/rollout: the pending cluster whose progress deadline is settled (ready in time or acted on).
    progress_deadline_settled: str = ""
    # raypilot.io/rollout onUnhealthy: the pending cluster found unhealthy and acted on.
    unhealthy_settled: str = ""
    # raypilot.io/rollout: the last run of a measured analysis gate at each point of the upgrade ("step 3",
    # "prePromotion", "postPromotion"), for the cluster it ran on.
    gate_runs: dict[str, GateRun] = field(default_factory=dict)
    # Blue-green gates: the cluster a manual promotion paused for, and the promotion whose post-promotion
    # analysis is pending (the old cluster is kept until it passes).
    promotion_awaited: str = ""
    post_promotion: PostPromotion | None = None
    # raypilot.io/rollout steps[].progressDeadlineSeconds: when the current step began, and the step (cluster
    # and step) whose deadline was acted on.
    step_clock: StepClock | None = None
    step_deadline_settled: str = ""
    # raypilot.io/rollout abortScaleDownDelaySeconds (decisions/rayservice/upgrade/abort_delay.py): the new
    # cluster of a rollback raypilot runs, until it is left over and held; the clusters kept for debugging
    # and until when (their deletion times are in deletion_schedule).
    aborted_cluster: str = ""
    kept_for_debugging: dict[str, datetime] = field(default_factory=dict)
    # raypilot.io/rollout revision history (decisions/rayservice/upgrade/revisions.py), oldest first; an undo
    # accepted and not acted on yet: the revision it goes back to, and the still running cluster to serve
    # again.
    revisions: list[Revision] = field(default_factory=list)
    undo_of: int | None = None
    undo_cluster: str = ""
    ray_phase: str = ""
    event_sequence: int = 0
    # raypilot.io/notify: the notifications made so far and those not yet sent (a new run sends them again).
    notify: NotifyBook = field(default_factory=NotifyBook)
    # upgrade_rayservice (Nexus): the workflows waiting for a generation that has not settled yet.
    upgrade_watchers: list[UpgradeWatch] = field(default_factory=list)
    deleting: bool = False
    # Test knob: continue as new once the run's history has this many events (None: only when suggested).
    continue_as_new_at_history_length: int | None = None
    run_number: int = 1
