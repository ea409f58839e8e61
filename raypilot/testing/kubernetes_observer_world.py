"""A fake Kubernetes observer for RayJobWorkflow tests on the fake world: `k8s_observer.watch_object`
(registered under its real name) starts one task per watch that signals the workflow `k8s_observed` with the
fake world's object whenever its view changes (and the watch wants that view), as the real observer does
after each watch event."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable, Sequence
from typing import Any

from temporalio import activity

from raypilot.testing.observer_world import WatchTasks
from wire import names
from wire.kubernetes import Observation
from wire.kubernetes_observer import (
    KUBE_OBSERVED_SIGNAL,
    ObjectWatch,
    ObservedObject,
    ends_watch,
    wants_view,
)
from wire.views import job_view, pod_view, raycluster_view

VIEWS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "RayCluster": raycluster_view,
    "Job": job_view,
    "HeadPod": pod_view,
}


class FakeKubernetesObserver(WatchTasks):
    @activity.defn(name=names.WATCH_K8S_OBJECT)
    async def watch_object(self, request: ObjectWatch) -> bool:
        self.world.calls.append((names.WATCH_K8S_OBJECT, request))
        running = self.tasks.pop(request.key, None)
        if running is not None:
            running.cancel()
        self.tasks[request.key] = asyncio.create_task(self._observe(request))
        return True

    def _object(self, request: ObjectWatch) -> dict[str, Any] | None:
        stores = {"RayCluster": self.world.clusters, "Job": self.world.jobs, "HeadPod": self.world.head_pods}
        return stores[request.kind].get(request.name)

    async def _observe(self, request: ObjectWatch) -> None:
        handle = self.client.get_workflow_handle(request.workflow_id)
        sent = request.last_view
        rounds = 0
        while True:
            rounds += 1
            found = self._object(request)
            view = VIEWS[request.kind](found)
            if view != sent and wants_view(request, view):
                observation = Observation(copy.deepcopy(found), view)
                await handle.signal(
                    KUBE_OBSERVED_SIGNAL,
                    ObservedObject(request.kind, request.name, observation, (1, 1, rounds)),
                )
                self.signals_sent += 1
                sent = view
                if ends_watch(request.until, request.kind, view):
                    return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.world._changed.wait(), timeout=0.05)

    def replace(self, activities: Sequence[Callable[..., Any]]) -> list[Callable[..., Any]]:
        """`activities` with this observer's registration in place of the fake world's (which has none)."""
        kept = [
            fn
            for fn in activities
            if activity._Definition.must_from_callable(fn).name != names.WATCH_K8S_OBJECT
        ]
        return [*kept, self.watch_object]
