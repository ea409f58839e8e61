"""What the RayService workflow last saw of the world, and the waits that tell it when that changes.

Observations (RayCluster objects, Serve views, endpoint counts) are kept in memory for the run: every act and
every wait returns the object it touched, so a pass reads the world only where it has nothing current. The
waits are long activities kept running across passes as long as they watch the same thing from the same last
view; one durable timer covers the earliest deadline; handlers wake the loop through `wake`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from models.raycluster import RayCluster
    from models.rayservice import RayService
    from wire.dashboard import DashboardTarget, ReplicaRanks, ServeObservation
    from wire.kubernetes import GatewayObservation, Observation, PodsObservation
    from workflows.decisions.rayservice.drain import DRAIN_POLL
    from workflows.decisions.rayservice.observed_clusters import (
        cluster_from_object,
        dashboard_port,
        head_service_of,
        metrics_port_of,
        parsed_cluster,
    )
    from workflows.decisions.rayservice.replica_ranks import rank_submission_id
    from workflows.decisions.rayservice.services import serve_port
    from workflows.decisions.rayservice.watches import Watch, serve_wait_is_quiet
    from workflows.rayservice.calls import RayServiceCalls

from workflows.kit.waits import TIMER, Finished, Waits

__all__ = ["RayServiceWorld"]

# Without the endpoints wait activity: recount after these delays, then rely on the other waits.
_ENDPOINT_RECOUNT_DELAYS = (1, 2, 4, 8, 16, 32)


def dashboard_target(cluster: RayCluster) -> DashboardTarget:
    name = cluster.metadata.name
    return DashboardTarget(
        namespace=cluster.metadata.namespace,
        head_service=head_service_of(name),
        dashboard_port=dashboard_port(cluster),
        **DashboardTarget.token_fields(name, cluster.spec),
    )


def with_known_spec(obj: dict[str, Any] | None, known: dict[str, Any] | None) -> dict[str, Any] | None:
    """A RayCluster as a wait returns it (metadata and status) completed with the spec last read."""
    if obj is None or "spec" in obj or known is None or "spec" not in known:
        return obj
    return {**obj, "spec": known["spec"]}


class RayServiceWorld:
    def __init__(self, calls: RayServiceCalls) -> None:
        self.calls = calls
        self.clusters: dict[str, dict[str, Any] | None] = {}
        # cluster -> (the observed object, its model): an observation is parsed once, not once per pass.
        self._models: dict[str, tuple[dict[str, Any], RayCluster]] = {}
        self.serve: dict[str, ServeObservation] = {}
        self.endpoints: dict[str, int] = {}
        # cluster -> (the settled replica set's key, the replica ranks read for it)
        self.ranks: dict[str, tuple[str, ReplicaRanks]] = {}
        self._rank_reads = 0
        # Clusters whose Pods may have gained or lost ready serve endpoints ("*": every cluster).
        self.stale_endpoints: set[str] = {"*"}
        # cluster -> the Serve view seen when the config was last PUT (no decision on that view again)
        self.submitted_on: dict[str, str] = {}
        self.gateway: GatewayObservation | None = None
        self.gateway_object: dict[str, Any] | None = None
        self.route_object: dict[str, Any] | None = None
        # A shared Gateway admitting routes by a namespace selector: the route namespace's labels.
        self.namespace_labels: dict[str, str] | None = None
        # The Pods of a cluster restarted in place, as the last listing or Pods wait saw them.
        self.pods: dict[str, PodsObservation] = {}
        # Draining cluster -> the in-flight reading its drain wait returned, not decided on yet.
        self.drain_readings: dict[str, int | None] = {}
        self._refresh: set[str] = set()
        self._waits = Waits(zero_timer_when_due=True)
        # The watch behind each key in flight (what its result tells about).
        self._watching: dict[tuple[str, str, str], Watch] = {}
        self._failed: set[tuple[str, str, str]] = set()
        # (kind, target) of the waits that failed in this run: whoever relies on them polls instead.
        self._fallen_back: set[tuple[str, str]] = set()
        self._endpoints_wait_missing = False

    # ---- reading ---------------------------------------------------------------------------------------

    def cluster(self, name: str, rayservice: RayService) -> RayCluster | None:
        obj = self.clusters.get(name) if name else None
        if obj is None:
            return None
        known = self._models.get(name)
        if known is not None and known[0] is obj:
            return known[1]
        model = parsed_cluster(obj)
        if model is None:  # the fallback depends on the RayService's spec: not remembered
            return cluster_from_object(obj, rayservice)
        self._models[name] = (obj, model)
        return model

    async def refresh_clusters(self, names: Iterable[str], owned: Iterable[str]) -> None:
        """Read the clusters that have no current observation. A name the workflow never created is not
        read: it is a pending cluster still to be created."""
        owned_names = set(owned)
        wanted = [
            name
            for name in dict.fromkeys(names)
            if name and (name not in self.clusters or name in self._refresh)
        ]
        to_read = [name for name in wanted if name in owned_names]
        for name in wanted:
            if name not in owned_names:
                self.clusters[name] = None
        found = await asyncio.gather(*(self.calls.get_cluster(name) for name in to_read))
        for name, obj in zip(to_read, found, strict=True):
            self.clusters[name] = obj
            self._refresh.discard(name)

    def forget(self, names: Iterable[str]) -> None:
        for name in names:
            self.clusters.pop(name, None)
            self._models.pop(name, None)
            self.serve.pop(name, None)
            self.ranks.pop(name, None)
            self.pods.pop(name, None)
            self.drain_readings.pop(name, None)
            self._refresh.discard(name)

    def forget_everything(self) -> None:
        self.clusters.clear()
        self._models.clear()
        self.serve.clear()
        self.ranks.clear()
        self.pods.clear()
        self.drain_readings.clear()
        self.endpoints.clear()
        self.stale_endpoints = {"*"}
        self.gateway = None
        self.gateway_object = None
        self.route_object = None
        self.namespace_labels = None
        self._refresh.clear()

    async def count_endpoints(self, services: Mapping[str, str]) -> dict[str, int]:
        """Ready endpoints per serve Service (name -> the cluster it selects), counted again only where the
        cluster's endpoints may have changed since the last count."""
        stale = self.stale_endpoints
        names = [
            name
            for name, cluster in services.items()
            if name not in self.endpoints or "*" in stale or cluster in stale
        ]
        if names:
            counts = await asyncio.gather(*(self.calls.count_ready_endpoints(name) for name in names))
            self.endpoints.update(zip(names, counts, strict=True))
            self.stale_endpoints = stale - {"*", *services.values()}
        return {name: self.endpoints.get(name, 0) for name in services}

    async def wait_clusters_gone(self, names: Iterable[str]) -> None:
        """Until each RayCluster is gone (its Pods terminated and the object removed), woken by changes."""

        async def gone(name: str) -> None:
            observation = await self.calls.wait_cluster_change(name, None)
            while observation.object is not None:
                observation = await self.calls.wait_cluster_change(name, observation.view)
            self.clusters[name] = None

        await asyncio.gather(*(gone(name) for name in names))

    # ---- waiting ---------------------------------------------------------------------------------------

    def _start(
        self, watch: Watch, rayservice: RayService
    ) -> workflow.ActivityHandle[Any] | asyncio.Task[Any]:
        if watch.kind == "head_ready":
            return self.calls.wait_head_ready(watch.target)
        if watch.kind == "serve":
            cluster = self.cluster(watch.target, rayservice)
            assert cluster is not None
            last = self.serve.get(watch.target)
            view = last.view if last else None
            settled = serve_wait_is_quiet(self.clusters, view)
            return self.calls.wait_serve(
                dashboard_target(cluster), watch.target, serve_port(cluster), view, settled
            )
        if watch.kind == "ranks":
            cluster = self.cluster(watch.target, rayservice)
            assert cluster is not None
            self._rank_reads += 1
            read = f"{workflow.info().run_id}/{self._rank_reads}"
            submission_id = rank_submission_id(watch.target, watch.last_view_key, read)
            return self.calls.read_replica_ranks(dashboard_target(cluster), watch.target, submission_id)
        if watch.kind == "pods":
            seen = self.pods.get(watch.target)
            return self.calls.wait_cluster_pods(watch.target, seen.view if seen else None)
        if watch.kind == "drain":
            port, quiet = metrics_port_of(self.clusters.get(watch.target)), int(watch.last_view_key)
            poll = DRAIN_POLL.total_seconds()
            return self.calls.wait_serve_requests_in_flight(watch.target, port, quiet, poll)
        if watch.kind == "gateway":
            gateway_view = self.gateway.view if self.gateway else None
            if "/" in watch.target:  # a shared Gateway or a user-owned route: "ns/gw,ns/route[,labels ns]"
                gateway, route, *labels_of = watch.target.split(",")
                gateway_ns, gateway_name = gateway.split("/")
                route_ns, route_name = route.split("/")
                labels = labels_of[0] if labels_of else None
                return self.calls.wait_shared_gateway(
                    (gateway_ns, gateway_name), (route_ns, route_name), labels, gateway_view
                )
            gateway, route = watch.target.split(",")
            return self.calls.wait_gateway(gateway, route, gateway_view)
        services = watch.target.split(",")
        counts = {name: self.endpoints.get(name, 0) for name in services}
        if self._endpoints_wait_missing:
            return asyncio.create_task(self._recount_endpoints(services, counts))
        return self.calls.wait_ready_endpoints(services, counts)

    async def _recount_endpoints(self, services: list[str], last: dict[str, int]) -> dict[str, int]:
        counts = last
        for delay in _ENDPOINT_RECOUNT_DELAYS:
            await workflow.sleep(timedelta(seconds=delay), summary="recount serve endpoints")
            found = await asyncio.gather(*(self.calls.count_ready_endpoints(name) for name in services))
            counts = dict(zip(services, found, strict=True))
            if counts != last:
                break
        return counts

    def saw_serve(self, cluster: str, serve: ServeObservation) -> None:
        """Serve and the head Pod of `cluster` as a wait (or a fresh read) saw them: the cluster's Serve wait
        waits from this view on."""
        previous = self.serve.get(cluster)
        if previous is not None and previous.view.get("head") != serve.view.get("head"):
            # Another head Pod (or none): read the cluster again (HeadPodReady) and its endpoints.
            self._refresh.add(cluster)
            self.stale_endpoints.add(cluster)
        self.serve[cluster] = serve

    def wait_failed(self, kind: str, target: str) -> bool:
        """A wait of this kind on `target` failed in this run. The watch policy retries every error but
        NotFoundError (no worker runs that wait: a worker of an older release), so what relies on it polls
        for the rest of the run instead (a new run tries the wait again)."""
        return (kind, target) in self._fallen_back

    async def stop(self, *, confirm: bool = True) -> None:
        """Cancel every wait and the timer before the run ends; with `confirm`, until the cancellations are
        recorded (before continue-as-new, not at a deletion: see RayServiceWorkflow.run)."""
        self._watching.clear()
        await self._waits.stop(confirm=confirm)

    async def wait(
        self,
        watches: list[Watch],
        deadline: datetime | None,
        woken: Callable[[], bool],
        rayservice: RayService,
    ) -> None:
        """Until a handler wakes the loop, the deadline passes, or a wait reports a change."""
        desired = {watch.key: watch for watch in watches if watch.key not in self._failed}
        self._waits.keep_only(desired)
        self._watching = {key: watch for key, watch in self._watching.items() if key in desired}
        for key, watch in desired.items():
            if not self._waits.running(key):
                self._waits.start(key, lambda watch=watch: self._start(watch, rayservice))  # type: ignore[misc]
                self._watching[key] = watch
        self._waits.arm_timer(deadline, "next deadline")
        if woken():
            return
        raced = await self._waits.race(woken)
        progressed = raced.changed
        for finished in raced.finished:
            if finished.key == TIMER:
                progressed = True
            else:
                key = cast(tuple[str, str, str], finished.key)
                progressed |= self._take(self._watching.pop(key), finished)
        if progressed:
            self._failed.clear()

    def _take(self, watch: Watch, finished: Finished) -> bool:
        """Record what a finished wait saw; False when it failed (it is not restarted until something else
        changes, so a broken wait cannot spin the loop)."""
        try:
            result = finished.value()
        except asyncio.CancelledError:
            return False
        except ActivityError as error:
            cause = error.cause
            if (
                watch.kind == "endpoints"
                and isinstance(cause, ApplicationError)
                and cause.type == "NotFoundError"
            ):
                workflow.logger.warning("no worker runs the endpoints wait; recounting endpoints instead")
                self._endpoints_wait_missing = True
                return True
            workflow.logger.warning("wait %s of %s failed: %s", watch.kind, watch.target, cause or error)
            self._failed.add(watch.key)
            self._fallen_back.add((watch.kind, watch.target))
            return False
        if watch.kind == "head_ready":
            observation: Observation = result
            self.clusters[watch.target] = with_known_spec(observation.object, self.clusters.get(watch.target))
        elif watch.kind == "serve":
            self.saw_serve(watch.target, result)
        elif watch.kind == "pods":
            self.pods[watch.target] = result
        elif watch.kind == "drain":
            self.drain_readings[watch.target] = result
        elif watch.kind == "ranks":
            self.ranks[watch.target] = (watch.last_view_key, result)
        elif watch.kind == "gateway":
            gateway: GatewayObservation = result
            self.gateway = gateway
            self.gateway_object = gateway.gateway
            self.route_object = gateway.route
            self.namespace_labels = gateway.namespace_labels
        else:
            self.endpoints.update(result)
        return True
