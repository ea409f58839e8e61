"""Drained deletion of dangling RayClusters (kuberay#3602), on by default: a cluster whose deletion delay has
passed is read (its Serve proxies' in-flight HTTP requests) and deleted only once drained or once the maximum
drain time (raypilot.io/max-drain-seconds, a minute without it) has passed; otherwise it is held until its
drain deadline, while a drain wait reports the readings that change the verdict's count: a drain writes no
history while requests stay in flight. (If that wait fails, the cluster is due again every DRAIN_POLL and read
by the passes.) `"0"` restores KubeRay's deletion at the delay. The verdicts are decided in
workflows/decisions/rayservice/drain.py. When its drain starts, the cluster's Serve proxies are told to close
kept-alive connections after their responses (activities/serve_connections.py), so that clients pinned to it
by a Service move to the active cluster before it goes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.rayservice import RayService
    from workflows.decisions.rayservice.cleanup import CleanupPlan
    from workflows.decisions.rayservice.drain import (
        MAX_DRAIN_ANNOTATION,
        Drain,
        DrainVerdict,
        decide_drain,
        held_drains_due,
        max_drain_time,
        next_drain_read,
    )
    from workflows.decisions.rayservice.observed_clusters import metrics_port_of
    from workflows.decisions.rayservice.watches import Watch
    from workflows.rayservice.part import RayServicePart
    from workflows.rayservice.world import dashboard_target

__all__ = ["CLOSING_MARGIN", "DRAIN_BY_DEFAULT_PATCH", "ClusterDrains", "metrics_port_of"]

# The proxies close connections for the maximum drain time and this margin: past it the cluster is gone.
CLOSING_MARGIN = timedelta(seconds=60)
# Runs recorded while draining was opt-in deleted a cluster without the annotation at its delay; they replay
# so (the patch is asked only without the annotation, when a cluster is due or draining).
DRAIN_BY_DEFAULT_PATCH = "rayservice-drain-by-default"


class ClusterDrains(RayServicePart):
    """A drain starts with the proxies closing kept-alive connections; a held cluster's readings come from
    its drain wait (the passes read it themselves when that wait failed)."""

    async def hold_undrained(self, rayservice: RayService, plan: CleanupPlan, now: datetime) -> CleanupPlan:
        """The cleanup plan with the clusters not yet drained held back until their drain deadline instead of
        deleted. With "0" the plan is KubeRay's (clusters held for a drain are due at once)."""
        drains = {name: self._drain(name, now) for name in self.state.drain_started}
        max_drain = self._max_drain(rayservice, deciding=bool(plan.delete_now or drains))
        polled = [name for name in drains if self.world.wait_failed("drain", name)]
        due, held_until = held_drains_due(plan.schedule, drains, max_drain, now, polled)
        reported = [name for name in held_until if name in self.world.drain_readings]
        first_due = min(held_until.values(), default=None)
        plan = replace(plan, schedule=held_until, delete_now=(*plan.delete_now, *due), next_due=first_due)
        if max_drain is None:
            self.forget(list(self.state.drain_started))
            return plan
        delete, held = await self._read_due(rayservice, (*plan.delete_now, *reported), now, max_drain)
        schedule = {name: at for name, at in plan.schedule.items() if name not in delete} | held
        self.forget_gone(list(schedule))
        next_due = min(schedule.values(), default=None)
        return replace(plan, schedule=schedule, delete_now=delete, next_due=next_due)

    def _max_drain(self, rayservice: RayService, *, deciding: bool) -> timedelta | None:
        """The maximum drain time (None: KubeRay's deletion at the delay). Without the annotation, a run that
        decides (a cluster is due or draining) asks the patch first: one recorded before it replays KubeRay's
        deletion at the delay."""
        annotations = rayservice.metadata.annotations or {}
        max_drain = max_drain_time(annotations)
        if MAX_DRAIN_ANNOTATION in annotations or not deciding:
            return max_drain
        return max_drain if workflow.patched(DRAIN_BY_DEFAULT_PATCH) else None

    async def _read_due(
        self, rayservice: RayService, due: Sequence[str], now: datetime, max_drain: timedelta
    ) -> tuple[tuple[str, ...], dict[str, datetime]]:
        """Of the clusters whose deletion delay has passed, those to delete now and those held (with the time
        to read them again)."""
        delete: list[str] = []
        held: dict[str, datetime] = {}
        for name in due:
            if name not in self.state.drain_started:
                await self._close_connections(rayservice, name, max_drain)
            drain = self._drain(name, now)
            if name in self.world.drain_readings:
                in_flight = self.world.drain_readings.pop(name)  # read by its drain wait
            else:
                port = metrics_port_of(self.world.clusters.get(name))
                in_flight = await self.calls.read_serve_requests_in_flight(name, port)
            verdict, drain = decide_drain(drain, in_flight, now, max_drain)
            self.state.drain_started[name] = drain.started
            self.state.drain_quiet_reads[name] = drain.quiet_reads
            if verdict == DrainVerdict.WAIT:
                reports = not self.world.wait_failed("drain", name)
                held[name] = next_drain_read(drain, max_drain, now, reports)
                continue
            workflow.logger.info(
                "RayCluster %s: %s after %.0f s of draining (%s requests in flight)",
                name,
                verdict.value,
                (now - drain.started).total_seconds(),
                in_flight,
            )
            self.forget([name])
            delete.append(name)
        return tuple(delete), held

    async def _close_connections(self, rayservice: RayService, name: str, max_drain: timedelta) -> None:
        """Best effort: a cluster whose proxies cannot be told (no dashboard, a Ray built otherwise) drains
        all the same, its kept-alive connections cut at the deletion."""
        cluster = self.world.cluster(name, rayservice)
        if cluster is None:
            return
        seconds = (max_drain + CLOSING_MARGIN).total_seconds()
        try:
            closing = await self.calls.close_serve_connections(dashboard_target(cluster), name, seconds)
        except ActivityError as error:
            workflow.logger.warning("RayCluster %s: kept-alive connections not closed: %s", name, error.cause)
            return
        if closing.error:
            workflow.logger.warning("RayCluster %s: connections not closed: %s", name, closing.error)
            return
        workflow.logger.info("RayCluster %s: %d Serve proxies close connections", name, closing.proxies)

    def _drain(self, name: str, now: datetime) -> Drain:
        """The cluster's drain so far (one starting now when it has none)."""
        return Drain(self.state.drain_started.get(name, now), self.state.drain_quiet_reads.get(name, 0))

    def watches(self) -> list[Watch]:
        """A drain wait per held draining cluster, from its run of zero readings (none for a cluster whose
        drain wait failed: the passes read it)."""
        state = self.state
        return [
            Watch("drain", name, str(state.drain_quiet_reads.get(name, 0)))
            for name in sorted(state.drain_started)
            if name in state.deletion_schedule
            and name not in self.world.drain_readings
            and not self.world.wait_failed("drain", name)
        ]

    def forget(self, names: Sequence[str]) -> None:
        for name in names:
            self.state.drain_started.pop(name, None)
            self.state.drain_quiet_reads.pop(name, None)
            self.world.drain_readings.pop(name, None)

    def forget_gone(self, scheduled: Sequence[str]) -> None:
        """Drains of clusters no longer scheduled (active or pending again, or deleted) are dropped."""
        self.forget([name for name in self.state.drain_started if name not in scheduled])
