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
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.dashboard_inputs import DashboardTarget, ReplicaRanks, ServeObservation, auth_secret_name
    from activities.inputs import GatewayObservation, Observation
    from models.raycluster import RayCluster
    from models.rayservice import RayService
    from workflows.decisions.rayservice_replica_ranks import rank_submission_id
    from workflows.decisions.rayservice_services import serve_port
    from workflows.decisions.rayservice_workflow_support import (
        Watch,
        cluster_from_object,
        dashboard_port,
        head_service_of,
    )
    from workflows.rayservice_activities import RayServiceCalls

__all__ = ["RayServiceWorld"]

# Without the endpoints wait activity: recount after these delays, then rely on the other waits.
_ENDPOINT_RECOUNT_DELAYS = (1, 2, 4, 8, 16, 32)


def dashboard_target(cluster: RayCluster) -> DashboardTarget:
    name = cluster.metadata.name
    return DashboardTarget(
        namespace=cluster.metadata.namespace,
        head_service=head_service_of(name),
        dashboard_port=dashboard_port(cluster),
        auth_secret=auth_secret_name(name, cluster.spec),
    )


def _ignore_outcome(task: asyncio.Future[Any]) -> None:
    # A cancelled wait's outcome (cancelled, or a result that raced the cancellation) is of no interest.
    if not task.cancelled():
        task.exception()


def with_known_spec(obj: dict[str, Any] | None, known: dict[str, Any] | None) -> dict[str, Any] | None:
    """A RayCluster as a wait returns it (metadata and status) completed with the spec last read."""
    if obj is None or "spec" in obj or known is None or "spec" not in known:
        return obj
    return {**obj, "spec": known["spec"]}


class RayServiceWorld:
    def __init__(self, calls: RayServiceCalls) -> None:
        self.calls = calls
        self.clusters: dict[str, dict[str, Any] | None] = {}
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
        self._refresh: set[str] = set()
        self._watches: dict[
            tuple[str, str, str], tuple[Watch, workflow.ActivityHandle[Any] | asyncio.Task[Any]]
        ] = {}
        self._failed: set[tuple[str, str, str]] = set()
        self._timer: tuple[datetime, asyncio.Task[None]] | None = None
        self._endpoints_wait_missing = False
        self._cancelling: list[workflow.ActivityHandle[Any] | asyncio.Task[Any]] = []

    # ---- reading ---------------------------------------------------------------------------------------

    def cluster(self, name: str, rayservice: RayService) -> RayCluster | None:
        if not name:
            return None
        return cluster_from_object(self.clusters.get(name), rayservice)

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
            self.serve.pop(name, None)
            self.ranks.pop(name, None)
            self._refresh.discard(name)

    def forget_everything(self) -> None:
        self.clusters.clear()
        self.serve.clear()
        self.ranks.clear()
        self.endpoints.clear()
        self.stale_endpoints = {"*"}
        self.gateway = None
        self.gateway_object = None
        self.route_object = None
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
            return self.calls.wait_serve(
                dashboard_target(cluster), watch.target, serve_port(cluster), last.view if last else None
            )
        if watch.kind == "ranks":
            cluster = self.cluster(watch.target, rayservice)
            assert cluster is not None
            self._rank_reads += 1
            read = f"{workflow.info().run_id}/{self._rank_reads}"
            submission_id = rank_submission_id(watch.target, watch.last_view_key, read)
            return self.calls.read_replica_ranks(dashboard_target(cluster), watch.target, submission_id)
        if watch.kind == "gateway":
            gateway, route = watch.target.split(",")
            return self.calls.wait_gateway(gateway, route, self.gateway.view if self.gateway else None)
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

    def _arm_timer(self, deadline: datetime | None) -> asyncio.Task[None] | None:
        if self._timer is not None and (
            deadline is None or self._timer[0] != deadline or self._timer[1].done()
        ):
            self._timer[1].cancel()
            self._timer = None
        if deadline is None:
            return None
        if self._timer is None:
            delay = max(deadline - workflow.now(), timedelta(0))
            self._timer = (deadline, asyncio.create_task(workflow.sleep(delay, summary="next deadline")))
        return self._timer[1]

    def _cancel(self, task: workflow.ActivityHandle[Any] | asyncio.Task[Any]) -> None:
        task.cancel()
        task.add_done_callback(_ignore_outcome)
        self._cancelling = [*(pending for pending in self._cancelling if not pending.done()), task]

    async def stop(self) -> None:
        """Cancel every wait and the timer, and wait until the cancellations are recorded (before
        continue-as-new or completion: a run must not close with a wait whose cancellation is unconfirmed)."""
        for _, task in self._watches.values():
            self._cancel(task)
        self._watches.clear()
        if self._timer is not None:
            self._timer[1].cancel()
            self._timer = None
        cancelling, self._cancelling = self._cancelling, []
        await asyncio.gather(*cancelling, return_exceptions=True)

    async def wait(
        self,
        watches: list[Watch],
        deadline: datetime | None,
        woken: Callable[[], bool],
        rayservice: RayService,
    ) -> None:
        """Until a handler wakes the loop, the deadline passes, or a wait reports a change."""
        desired = {watch.key: watch for watch in watches if watch.key not in self._failed}
        for key in list(self._watches):
            if key not in desired:
                self._cancel(self._watches.pop(key)[1])
        for key, watch in desired.items():
            if key not in self._watches:
                self._watches[key] = (watch, self._start(watch, rayservice))
        timer = self._arm_timer(deadline)
        if woken():
            return
        wake = asyncio.ensure_future(workflow.wait_condition(woken))
        tasks: list[asyncio.Future[Any]] = [wake, *(task for _, task in self._watches.values())]
        if timer is not None:
            tasks.append(timer)
        try:
            await workflow.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not wake.done():
                wake.cancel()
        progressed = wake.done() or (timer is not None and timer.done())
        for key, (watch, task) in list(self._watches.items()):
            if not task.done():
                continue
            self._watches.pop(key)
            progressed |= self._take(watch, task)
        if progressed:
            self._failed.clear()

    def _take(self, watch: Watch, task: workflow.ActivityHandle[Any] | asyncio.Task[Any]) -> bool:
        """Record what a finished wait saw; False when it failed (it is not restarted until something else
        changes, so a broken wait cannot spin the loop)."""
        try:
            result = task.result()
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
            return False
        if watch.kind == "head_ready":
            observation: Observation = result
            self.clusters[watch.target] = with_known_spec(observation.object, self.clusters.get(watch.target))
        elif watch.kind == "serve":
            serve: ServeObservation = result
            previous = self.serve.get(watch.target)
            if previous is not None and previous.view.get("head") != serve.view.get("head"):
                # Another head Pod (or none): read the cluster again (HeadPodReady) and its endpoints.
                self._refresh.add(watch.target)
                self.stale_endpoints.add(watch.target)
            self.serve[watch.target] = serve
        elif watch.kind == "ranks":
            self.ranks[watch.target] = (watch.last_view_key, result)
        elif watch.kind == "gateway":
            gateway: GatewayObservation = result
            self.gateway = gateway
            self.gateway_object = gateway.gateway
            self.route_object = gateway.route
        else:
            self.endpoints.update(result)
        return True
