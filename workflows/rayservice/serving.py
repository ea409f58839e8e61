"""Serving a RayService: the head Pods' ray.io/serve label, the Serve config of each cluster (submission by
KubeRay's cache rules, readiness), and the RayService-level Services (rayservice_controller.go steps 11, 12
and 14).

Where raypilot differs: a cluster counts as ready only once every application runs with its replicas at the
expected target capacity, as Serve reported it after the last submission; a submission is never repeated on
the view it was decided on (the applications just PUT are not yet reported).
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.naming import LABEL_SERVE
    from models.raycluster import RayCluster
    from models.rayservice import AppStatus, RayService
    from workflows.decisions.rayservice.cluster import goal_cluster_hash, is_incremental_upgrade_enabled
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.rayservice.observed_clusters import is_head_pod_ready
    from workflows.decisions.rayservice.replica_ranks import with_replica_ranks
    from workflows.decisions.rayservice.serve import (
        ServeConfigError,
        cache_submitted_serve_config,
        expected_target_capacity,
        serve_config_for_cluster,
        serve_config_json,
        serve_config_target_capacity,
        serve_update_event,
        should_skip_serve_config_submission,
        should_submit_serve_config,
    )
    from workflows.decisions.rayservice.serve_status import (
        check_serve_status,
        parse_serve_details,
        runs_target_capacity,
    )
    from workflows.decisions.rayservice.services import (
        MissingServePortError,
        head_serve_label_change,
        head_service_manifest,
        serve_service_manifest,
    )
    from workflows.decisions.rayservice.status import serve_endpoint_services
    from workflows.decisions.rayservice.upgrade.aborted_spec import serve_config_while_aborted
    from workflows.decisions.rayservice.watches import view_key
    from workflows.rayservice.part import RayServicePart
    from workflows.rayservice.world import dashboard_target

__all__ = ["RayServiceServing", "ServeResult"]


@dataclass
class ServeResult:
    ready: bool = False
    applications: dict[str, AppStatus] | None = None


class RayServiceServing(RayServicePart):
    def _wanted_config(self, rayservice: RayService, name: str, incremental: bool) -> str:
        """The Serve config `name` should run: the active cluster keeps its own during an incremental
        rollback, and an aborted spec's config is not submitted to it
        (decisions/rayservice/upgrade/aborted_spec.py)."""
        spec_config = rayservice.spec.serve_config_v2
        state = self.state
        cache = state.serve_config_cache
        wanted = serve_config_for_cluster(name, state.status, incremental, cache, spec_config)
        aborted, goal = state.controls.aborted_goal_hash, goal_cluster_hash(rayservice.spec)
        return serve_config_while_aborted(name, state.status, aborted, goal, cache, wanted)

    def existing_serve_services(
        self, rayservice: RayService, active: RayCluster | None, pending: RayCluster | None, incremental: bool
    ) -> dict[str, str]:
        """The serve Services whose ready endpoints make numServeEndpoints, among those that exist, each
        with the cluster it selects: the RayService's own once created; in incremental mode the per-cluster
        ones."""
        found: dict[str, str] = {}
        for name in serve_endpoint_services(rayservice, active, pending, self.config):
            if not incremental:
                if self.state.services_cluster:
                    found[name] = self.state.services_cluster
                continue
            cluster = name.removesuffix("-serve-svc")
            if cluster in self.state.per_cluster_services:
                found[name] = cluster
        return found

    # ---- head Pod serve label ------------------------------------------------------------------------------

    async def update_head_serve_labels(
        self, rayservice: RayService, clusters: tuple[RayCluster | None, RayCluster | None]
    ) -> None:
        exclude = rayservice.spec.exclude_head_pod_from_serve_svc
        for cluster in clusters:
            if cluster is None:
                continue
            observation = self.world.serve.get(cluster.metadata.name)
            if observation is None or observation.head_pod is None:
                continue
            label = head_serve_label_change(observation.head_pod, exclude, observation.head_serve_healthy)
            if label is None:
                continue
            pod_name = str(observation.head_pod["metadata"]["name"])
            await self.calls.label_head_pod(pod_name, label)
            observation.head_pod["metadata"].setdefault("labels", {})[LABEL_SERVE] = label
            self.world.stale_endpoints.add(cluster.metadata.name)

    # ---- Serve ---------------------------------------------------------------------------------------------

    async def reconcile_serve(self, rayservice: RayService, cluster: RayCluster) -> ServeResult:
        """reconcileServe: nothing until the head Pod is ready and Serve answered; then submit the config
        when the cache rules ask for it, and report readiness (every app RUNNING with its replicas, at the
        expected target capacity) from what Serve reported before this pass's submission."""
        if not is_head_pod_ready(cluster, self.config.feature_gates.ray_cluster_status_conditions):
            return ServeResult()
        name = cluster.metadata.name
        observation = self.world.serve.get(name)
        if observation is None or observation.details is None:
            return ServeResult()
        state = self.state
        details = parse_serve_details(observation.details)
        applications = check_serve_status(details).application_statuses
        state.serve_details[name] = with_replica_ranks(observation.details, self.world.ranks.get(name))
        incremental = is_incremental_upgrade_enabled(rayservice.spec, self.config)
        seen = view_key(observation.view)
        if self.world.submitted_on.get(name) == seen:
            # Serve has not reported since the config was PUT: neither submit again nor call it ready.
            return ServeResult(False, applications)
        submitted = False
        wanted = self._wanted_config(rayservice, name, incremental)
        if not should_skip_serve_config_submission(name, state.status, incremental):
            cached = state.serve_config_cache.get(name, "")
            submit, _reason = should_submit_serve_config(cached, wanted, applications)
            if submit:
                submitted = await self._submit_serve_config(rayservice, cluster, incremental, wanted)
                if submitted:
                    self.world.submitted_on[name] = seen
        capacity = serve_config_target_capacity(name, state.status, incremental)
        expected = expected_target_capacity(wanted, capacity)
        ready = not submitted and runs_target_capacity(details, expected)
        return ServeResult(ready, applications)

    async def _submit_serve_config(
        self, rayservice: RayService, cluster: RayCluster, incremental: bool, wanted: str
    ) -> bool:
        """PUT the wanted config (the spec's, see _wanted_config); True when Serve accepted it (then cached
        for that cluster)."""
        state, name = self.state, cluster.metadata.name
        namespace = rayservice.metadata.namespace
        error: str | None = None
        try:
            capacity = serve_config_target_capacity(name, state.status, incremental)
            config = serve_config_json(wanted, capacity)
            await self.calls.put_serve_config(dashboard_target(cluster), config)
        except ServeConfigError as invalid:
            error = str(invalid)
        except ActivityError as failed:
            error = str(failed.cause or failed)
        if error is None:
            state.serve_config_cache = cache_submitted_serve_config(state.serve_config_cache, name, wanted)
        await self.commit(state.status, [serve_update_event(namespace, name, error)])
        return error is None

    # ---- Services ------------------------------------------------------------------------------------------

    async def reconcile_services(
        self,
        rayservice: RayService,
        cluster: RayCluster | None,
        incremental: bool,
        events: list[RayServiceEvent],
    ) -> str | None:
        """Point `<rs>-head-svc` and `<rs>-serve-svc` at `cluster` (created the first time, re-pointed when
        the target changes); the cluster they select, or None when neither cluster is ready."""
        if cluster is None:
            return None
        state, name = self.state, cluster.metadata.name
        if state.services_cluster == name:
            return name
        bodies = [head_service_manifest(rayservice, cluster)]
        try:
            if not incremental:  # incremental upgrades serve through the per-cluster Services
                bodies.append(serve_service_manifest(rayservice, cluster, incremental))
        except MissingServePortError as missing:
            events.append(RayServiceEvent("Warning", "FailedToCreateServeService", str(missing)))
        for body in bodies:
            service_name = str(body["metadata"]["name"])
            updated = None
            if state.services_cluster:
                updated = await self.calls.update_service_spec(service_name, body["spec"])
            if updated is None:
                await self.calls.create_service(body)
        state.services_cluster = name
        self.world.stale_endpoints.add("*")
        return name
