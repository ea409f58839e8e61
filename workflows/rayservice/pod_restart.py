"""`raypilot.io/in-place-restart` with strategy None: the active RayCluster updated in place and its Pods
restarted group by group, then the head (decisions/rayservice/pod_restart.py decides each step).

A pass runs only when something a step decides on changed: the cluster's Pods (a Pods wait from the view the
last step used) or Serve (the cluster's Serve wait, made to wait from the fresh read the step used); every
RESTART_POLL only while one of those waits has failed."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.raycluster import RayCluster
    from models.rayservice import RayService, RayServiceStatuses
    from wire.kubernetes import PodsObservation
    from wire.views import cluster_pods_view
    from workflows.decisions.rayservice.cluster import (
        goal_cluster_hash,
        in_place_update_request,
        rayservice_cluster_manifest,
    )
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.rayservice.pod_restart import (
        HEAD_GROUP,
        PodRestart,
        desired_pods_per_group,
        next_pod_restart_check,
        next_pod_restart_step,
        pod_restart_plan,
        roll_moved_on,
        wants_in_place_restart,
        with_pod_restart_condition,
    )
    from workflows.decisions.rayservice.serve import expected_target_capacity
    from workflows.decisions.rayservice.serve_status import parse_serve_details, runs_target_capacity
    from workflows.decisions.rayservice.services import serve_port
    from workflows.decisions.rayservice.strategy_none import UnappliedSpec, unapplied_cluster_spec
    from workflows.decisions.rayservice.watches import Watch, view_key
    from workflows.rayservice.part import RayServicePart
    from workflows.rayservice.world import dashboard_target

__all__ = ["PodRestarts"]

# A view no Serve observation has: the Serve wait returns at once with what Serve reports now.
FRESH_READ: Final = {"raypilot.io/fresh-read": True}


class PodRestarts(RayServicePart):
    # The next pass runs at once (no wait would wake it): this one moved the roll to its next group (whose
    # Pods that pass deletes), or its fresh Serve read saw what the Serve part of the pass has not acted on.
    again = False

    async def apply_spec(
        self, rayservice: RayService, active: RayCluster | None, pending: RayCluster | None
    ) -> tuple[RayCluster | None, UnappliedSpec | None, list[RayServiceEvent]]:
        """Strategy None: a goal the active cluster does not run is reported as not applied; with
        raypilot.io/in-place-restart it is written to the cluster and a roll of its Pods begins."""
        unapplied = unapplied_cluster_spec(rayservice, active, pending, self.config)
        if unapplied is None or not wants_in_place_restart(rayservice.metadata.annotations):
            return active, unapplied, []
        current = self.world.clusters.get(unapplied.cluster)
        if current is None:
            return active, unapplied, []
        goal = rayservice_cluster_manifest(rayservice, unapplied.cluster, self.config)
        updated = await self.calls.update_cluster(unapplied.cluster, in_place_update_request(current, goal))
        self.world.clusters[unapplied.cluster] = updated
        return (
            self.world.cluster(unapplied.cluster, rayservice),
            None,
            [self.start(rayservice, unapplied.cluster)],
        )

    def start(self, rayservice: RayService, cluster: str) -> RayServiceEvent:
        """A roll of `cluster`'s Pods towards the goal spec (just written to it) begins (or begins again for
        a newer goal)."""
        spec = rayservice.spec.ray_cluster_config
        self.state.pod_restart = pod_restart_plan(cluster, goal_cluster_hash(rayservice.spec), spec)
        namespace = rayservice.metadata.namespace
        message = (
            f"Strategy None with raypilot.io/in-place-restart: the rayClusterConfig change was written to "
            f"RayCluster {namespace}/{cluster}; its Pods restart group by group, then the head (traffic may "
            "drop while the head restarts)."
        )
        self.state.pod_restart_message = message
        return RayServiceEvent("Warning", "InPlaceRestartStarted", message)

    async def step(self, rayservice: RayService, active: RayCluster | None) -> list[RayServiceEvent]:
        """One step of the roll in progress, if any: delete the next group's Pods, or wait, or move on."""
        state = self.state
        restart = state.pod_restart
        self.again = False
        if restart is None:
            return []
        if active is None or active.metadata.name != restart.cluster:
            state.pod_restart = None  # the cluster it rolled is no longer the active one
            return []
        pods = await self._pods(restart.cluster)
        serve_ready = bool(restart.replaced) and await self._serve_ready_now(rayservice, active, restart)
        desired = desired_pods_per_group(rayservice.spec.ray_cluster_config)
        step = next_pod_restart_step(restart, pods, desired, serve_ready, rayservice.metadata.namespace)
        for name, uid in step.delete:
            await self.calls.delete_pod(name, uid)
        state.pod_restart = step.restart
        state.pod_restart_message = step.message
        self.again |= roll_moved_on(restart, step.restart)
        return list(step.events)

    async def _pods(self, cluster: str) -> list[dict[str, Any]]:
        """The cluster's Pods: as its Pods wait keeps them, listed when there is none (or it failed)."""
        seen = self.world.pods.get(cluster)
        if seen is not None and not self.world.wait_failed("pods", cluster):
            return seen.pods
        pods = await self.calls.list_cluster_pods(cluster)
        self.world.pods[cluster] = PodsObservation(pods, cluster_pods_view(pods))
        return pods

    async def _serve_ready_now(
        self, rayservice: RayService, cluster: RayCluster, restart: PodRestart
    ) -> bool:
        """Serve read now (not the last change the Serve wait reported, which may predate the deletion):
        every application RUNNING with its replicas, answered by a head that is not one being replaced."""
        name = cluster.metadata.name
        observation = await self.calls.wait_serve(
            dashboard_target(cluster), name, serve_port(cluster), FRESH_READ, quiet=False
        )
        if name in self.world.serve and self.world.serve[name].view != observation.view:
            # The Serve wait must wait from what this step saw (from an older view it could miss Serve
            # coming back to it), and the next pass acts on it at once (e.g. submits the config again to a
            # new head), as the Serve wait's return would have made it.
            self.world.saw_serve(name, observation)
            self.again = True
        head_uid = str(((observation.head_pod or {}).get("metadata") or {}).get("uid") or "")
        if observation.details is None or (
            restart.group == HEAD_GROUP and head_uid in (*restart.replaced, "")
        ):
            return False
        expected = expected_target_capacity(rayservice.spec.serve_config_v2, None)
        return runs_target_capacity(parse_serve_details(observation.details), expected)

    def with_condition(self, status: RayServiceStatuses, now: datetime) -> RayServiceStatuses:
        state = self.state
        return with_pod_restart_condition(
            status, state.pod_restart is not None, state.pod_restart_message, now
        )

    def next_check(self, now: datetime) -> datetime | None:
        restart = self.state.pod_restart
        if restart is None:
            return None
        failed = any(self.world.wait_failed(kind, restart.cluster) for kind in ("pods", "serve"))
        return next_pod_restart_check(True, not failed, now)

    def watches(self) -> list[Watch]:
        """The Pods of the cluster rolled, from the view the last step decided on."""
        restart = self.state.pod_restart
        if restart is None or self.world.wait_failed("pods", restart.cluster):
            return []
        seen = self.world.pods.get(restart.cluster)
        return [Watch("pods", restart.cluster, view_key(seen.view if seen is not None else None))]
