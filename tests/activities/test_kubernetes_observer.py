"""The Kubernetes observer's activity against the real API server (its real list and watch requests, so the
RBAC audit knows them), with the Temporal side in memory: a RayCluster watch gets only the view that ends
its wait, a submitter Job watch gets its end, a head Pod watch its Pod, and an expired watch (410 Gone)
relists without losing a change."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.kubernetes import namespace_cache
from activities.kubernetes.clusters import RayClusterActivities
from activities.kubernetes.observer import KubernetesObserverActivities
from activities.kubernetes.workloads import WorkloadActivities
from activities.registry import ActivityDependencies
from sandbox.faults import FaultRule
from sandbox.testing import wait_until
from tests.activities.conftest import ActivityKube, small_raycluster, submitter_body
from wire.kubernetes import CreateObject, Ownership
from wire.kubernetes_observer import (
    KUBE_OBSERVED_SIGNAL,
    KUBE_UNWATCH_KEYS_SIGNAL,
    KUBE_WATCHES_QUERY,
    ObjectWatch,
    ObjectWatchBook,
    ObjectWatchChanges,
    ObservedObject,
    ObserveKubernetes,
    ends_watch,
)

pytestmark = pytest.mark.timeout(60)

OWNER = Ownership("RayJob", "obs", "rayjob/ns/obs")


class _ObserverTemporal:
    """The observer workflow in memory: its book answers the `watches` query and takes `unwatch-keys`; every
    view signalled to a RayJob is recorded."""

    def __init__(self) -> None:
        self.book = ObjectWatchBook()
        self.observed: asyncio.Queue[ObservedObject] = asyncio.Queue()

    def get_workflow_handle(self, workflow_id: str, **_: Any) -> _ObserverTemporal:
        return self

    async def query(self, name: str, since: int, **_: Any) -> ObjectWatchChanges:
        assert name == KUBE_WATCHES_QUERY
        return self.book.changes_since(since)

    async def signal(self, name: str, arg: Any = None) -> None:
        if name == KUBE_OBSERVED_SIGNAL:
            await self.observed.put(arg)
        elif name == KUBE_UNWATCH_KEYS_SIGNAL:
            for key in arg:
                self.book.unwatch(key)

    async def next_view(self, kind: str) -> ObservedObject:
        while True:
            seen = await self.observed.get()
            if seen.kind == kind:
                return seen


@contextlib.asynccontextmanager
async def _observing(deps: ActivityDependencies, namespace: str, temporal: _ObserverTemporal) -> Any:
    observer = KubernetesObserverActivities(dataclasses.replace(deps, temporal_client=temporal))  # type: ignore[arg-type]
    env = ActivityEnvironment()
    request = ObserveKubernetes(namespace, "raypilot-k8s-observer/q/ns", 1, book_seconds=0.05)
    running = asyncio.ensure_future(env.run(observer.observe_namespace, request))
    try:
        yield
    finally:
        env.cancel()
        with contextlib.suppress(BaseException):
            await running


async def test_the_observer_follows_clusters_jobs_and_head_pods(
    cluster: ActivityKube,
    deps: ActivityDependencies,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Watches end after a second (instead of a minute), so the test sees one renewed into a 410 Gone.
    monkeypatch.setattr(namespace_cache, "WATCH_SECONDS", 1)
    temporal = _ObserverTemporal()
    created = await asyncio.to_thread(
        ActivityEnvironment().run,
        RayClusterActivities(deps).create_raycluster,
        CreateObject(small_raycluster("rc", namespace), OWNER),
    )
    temporal.book.watch(ObjectWatch("RayCluster", namespace, "rc", "rayjob/ns/obs", "ready"))
    async with _observing(deps, namespace, temporal), asyncio.timeout(30):
        ready = await temporal.next_view("RayCluster")
        # Only the view that ends the wait: ready (never an intermediate state), then the watch is done.
        assert ready.observation.view["state"] == "ready"
        assert ready.observation.view["uid"] == created["metadata"]["uid"]
        assert "spec" not in (ready.observation.object or {})
        assert ready.version[:2] == (1, 1)
        await _until(lambda: not temporal.book.watches)  # the observer unwatched it itself

        temporal.book.watch(ObjectWatch("HeadPod", namespace, "rc", "rayjob/ns/obs"))
        pod = await temporal.next_view("HeadPod")
        assert pod.observation.view["exists"]
        assert pod.observation.view["phase"] == "Running"

        # The Jobs' watch expires (410 Gone when renewed, as after a compaction): the observer lists again
        # and still sees the Job's end.
        lists_before = cluster.requests("list jobs")
        cluster.add_fault(
            FaultRule(frozenset({"watch"}), frozenset({"jobs"}), error_rate=1.0, status=410, times=1)
        )
        await _until(lambda: cluster.requests("list jobs") > lists_before)
        job = await asyncio.to_thread(
            ActivityEnvironment().run,
            WorkloadActivities(deps).create_job,
            CreateObject(submitter_body("obs", namespace), OWNER),
        )
        temporal.book.watch(ObjectWatch("Job", namespace, "obs", "rayjob/ns/obs", "finished", last_view=None))
        # Every change of the Job comes (the real Job controller may set SuccessCriteriaMet before Complete,
        # in a write of its own) until one ends the wait.
        seen = await temporal.next_view("Job")
        while not ends_watch("finished", "Job", seen.observation.view):
            seen = await temporal.next_view("Job")
        assert ["Complete", "True"] in [c[:2] for c in seen.observation.view["conditions"]]
        assert seen.observation.view["uid"] == job["metadata"]["uid"]
        assert seen.version > pod.version > ready.version


async def _until(holds: Any) -> None:
    await wait_until(holds, within=20, what="the observer's step")
