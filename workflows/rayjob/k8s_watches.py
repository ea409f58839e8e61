"""The RayJob's Kubernetes-side waits through the namespace's Kubernetes observer: register an interest in
an object once per attempt (signal-with-start of the observer, a local activity), then wait as a keyed future
that the `k8s_observed` signal resolves: no activity slot, no history event until the view it waits for
arrives.

Safety net while running: at the job observer's hourly check the attempt registers again (a watch registered
again gets its object's view again, and a lost observer is started anew). Initializing arms no check timer
of its own (it would cost two history events per RayJob for a case that needs an observer terminated by
hand): its RayCluster wait then ends at its deadline, an `apply` or a `delete`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from wire import stubs
    from wire.kubernetes import Observation
    from wire.kubernetes_observer import ObjectWatch, ObservedKind, WatchGoal, object_key
    from workflows.decisions.rayjob.deadlines import OBSERVER_CHECK_INTERVAL

from workflows.kit.calls import IO, call
from workflows.rayjob.core import RayJobPart

ViewTest = Callable[[Mapping[str, Any]], bool]


def _always(view: Mapping[str, Any]) -> bool:
    return True


class KubernetesWatches(RayJobPart):
    def usable(self) -> bool:
        """Whether this attempt waits on the observer (else on the per-object wait activities)."""
        return self.core.state.k8s_observes and not self.core.state.attempt.k8s_observer_missing

    async def register(
        self,
        kind: ObservedKind,
        name: str,
        until: WatchGoal,
        last_view: dict[str, Any] | None = None,
        check_at: datetime | None = None,
    ) -> bool:
        """Registers this workflow's interest in the object (holding `last_view` of it) once per attempt, and
        again once its check is due; the next check at `check_at` (the job observer's, so that one timer
        serves both) or an `OBSERVER_CHECK_INTERVAL` from now. False when the observer cannot be used (the
        caller waits with an activity)."""
        if not self.usable():
            return False
        attempt = self.core.state.attempt
        key = object_key(kind, name)
        now = workflow.now()
        due = attempt.k8s_check_at is not None and now >= attempt.k8s_check_at
        if key in attempt.k8s_registered and not due:
            return True
        if key not in attempt.k8s_registered:
            # A view held from an earlier attempt (the submitter Job keeps its name) is not this attempt's.
            self.core.state.k8s_views.pop(key, None)
        request = ObjectWatch(
            kind, self.core.namespace, name, self.core.state.workflow_id, until, last_view=last_view
        )
        if not await call(stubs.watch_object, request, IO.STEP):
            attempt.k8s_observer_missing = True
            return False
        if key not in attempt.k8s_registered:
            attempt.k8s_registered.append(key)
        attempt.k8s_check_at = check_at if check_at is not None else now + OBSERVER_CHECK_INTERVAL
        return True

    def forget(self, kind: ObservedKind, name: str) -> None:
        """The observer dropped the watch (its object is gone): a later wait registers again."""
        key = object_key(kind, name)
        attempt = self.core.state.attempt
        if key in attempt.k8s_registered:
            attempt.k8s_registered.remove(key)

    async def next_view(
        self, kind: ObservedKind, name: str, last_view: Mapping[str, Any] | None, ends: ViewTest = _always
    ) -> Observation:
        """The observer's first view of the object that differs from `last_view` and ends the wait."""
        key = object_key(kind, name)
        state = self.core.state

        def arrived() -> bool:
            held = state.k8s_views.get(key)
            return held is not None and held.observation.view != last_view and ends(held.observation.view)

        await workflow.wait_condition(arrived)
        observation = state.k8s_views[key].observation
        state.attempt.k8s_consumed[key] = observation.view
        return observation

    def consumed(self, kind: ObservedKind, name: str) -> dict[str, Any] | None:
        return self.core.state.attempt.k8s_consumed.get(object_key(kind, name))
