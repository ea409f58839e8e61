"""RayServiceWorkflow: one entity workflow per RayService (id `rayservice/<namespace>/<name>`) that does the
job of KubeRay's RayService controller for as long as the RayService exists.

Shape: observe -> decide -> act -> wait. A pass (reconcile.py) acts like one KubeRay reconcile; the
loop then waits for what can change a decision: an `apply`/`delete`/control update, a long wait activity per
cluster (head Pod ready, then Serve and the head Pod), and one durable timer for the earliest deadline. An
idle RayService therefore adds no history. The workflow continues as new when the server suggests it (or at
the test knob), after every handler finished, carrying its whole state (state.py).

Handlers (docs/contract.md §3): query `status`; updates `apply` (validated by its validator: an invalid or
mismatched manifest is rejected with ValidationFailed and changes nothing; the newest accepted manifest wins)
and `delete` (delete every owned object, then complete; with the Orphan propagation policy, let go of them
and complete: decisions/rayservice/deletion.py); and the upgrade controls
(decisions/rayservice/upgrade/controls.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    # Modules whose dataclasses are decoded inside the workflow must be imported here, from the sandboxed
    # module itself: pydantic resolves their annotations through the sandbox's own sys.modules.
    import wire.analysis
    import wire.dashboard
    import wire.kubernetes
    import wire.nexus
    import wire.notify  # noqa: F401
    import workflows.decisions.rayservice.upgrade.blue_green
    import workflows.decisions.rayservice.upgrade.controls
    import workflows.decisions.rayservice.upgrade.gates
    import workflows.decisions.rayservice.upgrade.revisions
    import workflows.decisions.rayservice.upgrade.step_deadline
    import workflows.decisions.rayservice.upgrade.step_plan  # noqa: F401
    from models.features import FeatureGates
    from models.naming import KIND_RAYSERVICE
    from models.operator import OperatorConfig
    from models.rayservice import RayServiceStatuses
    from wire import stubs
    from wire.nexus import WATCH_UPGRADE_SIGNAL, UpgradeWatch
    from wire.notify import NotifiedObject
    from workflows.decisions.rayservice.cluster import goal_cluster_hash, is_incremental_upgrade_enabled
    from workflows.decisions.rayservice.conditions import RayServiceEvent, ray_phase
    from workflows.decisions.rayservice.continue_as_new import should_continue_as_new
    from workflows.decisions.rayservice.deletion import deletion_request_error, lets_go_of_owned_objects
    from workflows.decisions.rayservice.manifest import (
        manifest_error,
        manifest_update_error,
        next_generation,
        rayservice_at,
    )
    from workflows.decisions.rayservice.notify import rayservice_notifications
    from workflows.decisions.rayservice.status_view import (
        current_details,
        stamp_status_update,
        status_query,
    )
    from workflows.decisions.rayservice.upgrade.controls import (
        UPGRADE_CONTROL_CONDITION,
        UpgradeControlRejected,
        UpgradeControls,
        abort_upgrade,
        new_cluster_promote_rejection,
        pause_upgrade,
        promote_upgrade,
        resume_upgrade,
    )
    from workflows.decisions.rayservice.upgrade.revisions import revision_rows
    from workflows.rayservice.calls import RayServiceCalls
    from workflows.rayservice.part import PassContext
    from workflows.rayservice.reconcile import RayServiceReconciler
    from workflows.rayservice.revisions import RevisionKeeper
    from workflows.rayservice.start import (
        involved_object,
        manifest_namespace_and_name,
        start_from_adopted_cluster,
    )
    from workflows.rayservice.state import RayServiceState
    from workflows.rayservice.upgrade_watchers import UpgradeWatchers
    from workflows.rayservice.world import RayServiceWorld
    from workflows.search_attributes import RAY_KIND, RAY_NAME, RAY_NAMESPACE, RAY_PHASE

from workflows.kit.builds import next_run_versioning, target_build_changed
from workflows.kit.calls import IO, call_without_input
from workflows.kit.metrics import rayservice_status_changed
from workflows.kit.notify import Notifier

__all__ = ["CONTROL_REJECTED", "VALIDATION_FAILED", "RayServiceWorkflow"]

VALIDATION_FAILED: Final = "ValidationFailed"
CONTROL_REJECTED: Final = "UpgradeControlRejected"
# Passes that decide something the next pass acts on run back to back, at most this many in a row.
MAX_IMMEDIATE_PASSES: Final = 8


def _rejected(message: str) -> ApplicationError:
    return ApplicationError(message, type=VALIDATION_FAILED, non_retryable=True)


def _control_rejected(message: str) -> ApplicationError:
    return ApplicationError(message, type=CONTROL_REJECTED, non_retryable=True)


@workflow.defn(name="RayServiceWorkflow")
class RayServiceWorkflow:
    @workflow.init
    def __init__(self, manifest: dict[str, Any], carried: RayServiceState | None = None) -> None:
        self._state = carried if carried is not None else RayServiceState(manifest=dict(manifest))
        self._config: OperatorConfig | None = None
        self._changes = 0
        self._deletion_done = False
        self._letting_go = False
        self._deleted: list[dict[str, str]] = []
        namespace, name = manifest_namespace_and_name(self._state.manifest)
        self._calls = RayServiceCalls(namespace, name, workflow.info().workflow_id)
        self._calls.involved_object = involved_object(self._state.manifest)
        self._revisions = RevisionKeeper(self._state)
        self._watchers = UpgradeWatchers(self._state)
        info = workflow.info()
        target = NotifiedObject(
            KIND_RAYSERVICE, namespace, name, info.workflow_id, info.first_execution_run_id
        )
        # The cluster-wide default (RAYPILOT_NOTIFY) as this run's operator configuration recorded it.
        self._notifier = Notifier(
            target, self._state.notify, lambda: self._config.notify if self._config is not None else None
        )

    @property
    def _gates(self) -> FeatureGates:
        return self._config.feature_gates if self._config is not None else FeatureGates()

    # ---- the loop ------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, manifest: dict[str, Any], carried: RayServiceState | None = None) -> dict[str, Any]:
        config = await call_without_input(stubs.read_operator_config, IO.CONFIG)
        self._config = config
        state = self._state
        if state.run_number == 1:
            # The first run checks its input (a state carried into a first run only sets test knobs).
            error = manifest_error(state.manifest, config.feature_gates)
            if error is not None:
                raise _rejected(error)
            start_from_adopted_cluster(state)
        self._notifier.send_unsent()  # what the run before did not send (none without raypilot.io/notify)
        calls = self._calls
        world = RayServiceWorld(calls)
        reconciler = RayServiceReconciler(PassContext(state, world, calls, config, self._commit))
        immediate = 0
        while not state.deleting:
            seen = self._changes
            rayservice = reconciler.rayservice()
            incremental = is_incremental_upgrade_enabled(rayservice.spec, config)
            self._revisions.before_pass(rayservice, incremental, workflow.now())
            outcome = await reconciler.reconcile()
            self._revisions.after_pass(world, workflow.now())
            await self._watchers.answer_settled()
            if self._should_continue_as_new():
                await world.stop()
                await workflow.wait_condition(workflow.all_handlers_finished)
                if not state.deleting:
                    state.run_number += 1
                    workflow.continue_as_new(
                        args=[state.manifest, state], initial_versioning_behavior=next_run_versioning()
                    )
            if outcome.again and immediate < MAX_IMMEDIATE_PASSES:
                immediate += 1
                continue
            immediate = 0
            await world.wait(
                outcome.watches,
                outcome.deadline,
                lambda seen=seen: self._changes != seen or state.deleting,  # type: ignore[misc]
                reconciler.rayservice(),
            )
        if self._letting_go:
            await world.stop(confirm=False)  # what it made keeps serving, managed by whoever takes it over
        else:
            # raypilot.io/httproute: the user's route is theirs; it points at <rs>-serve-svc again.
            await reconciler.incremental.routing.release(reconciler.rayservice())
            self._deleted = await calls.delete_owned()
            clusters = [ref["name"] for ref in self._deleted if ref.get("kind") == "RayCluster"]
            # The Serve wait learns of its cancellation at its next heartbeat (up to a minute), or returns
            # once the deleted head is gone. Its cancellation is not confirmed: a wait lost with a crashed
            # worker is recorded cancelled only at its heartbeat timeout (3 min for the quiet Serve wait),
            # which would hold the deletion that long; one left on a live worker learns at its next heartbeat
            # that the run closed.
            await asyncio.gather(world.stop(confirm=False), world.wait_clusters_gone(clusters))
        self._deletion_done = True
        await self._watchers.answer_deleted()
        await self._notifier.flush()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return status_query(state.status, state.serve_details)

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return should_continue_as_new(
            info.is_continue_as_new_suggested(),
            info.get_current_history_length(),
            self._state.continue_as_new_at_history_length,
            target_build_changed(),
        )

    async def _commit(
        self, status: RayServiceStatuses, events: list[RayServiceEvent], upgrade_line: str = ""
    ) -> None:
        """Persist a new status (lastUpdateTime only when it changed), record its events, upsert RayPhase when
        the phase changed, and show the current details in the Web UI."""
        state = self._state
        rayservice_status_changed(*manifest_namespace_and_name(state.manifest), state.status, status)
        self._notify(state.status, status, events)
        state.status = stamp_status_update(state.status, status, workflow.now())
        for event in events:
            state.event_sequence += 1
            event_id = f"{workflow.info().first_execution_run_id[:8]}-{state.event_sequence}"
            await self._calls.record_event(event_id, event)
        phase = ray_phase(state.status)
        if phase != state.ray_phase:
            namespace, name = manifest_namespace_and_name(state.manifest)
            updates = [RAY_PHASE.value_set(phase)]
            if workflow.info().typed_search_attributes.get(RAY_KIND) is None:
                updates += [
                    RAY_KIND.value_set(KIND_RAYSERVICE),
                    RAY_NAMESPACE.value_set(namespace),
                    RAY_NAME.value_set(name),
                ]
            workflow.upsert_search_attributes(updates)
            state.ray_phase = phase
        workflow.set_current_details(current_details(state.status, phase, upgrade_line))

    def _notify(
        self, before: RayServiceStatuses, after: RayServiceStatuses, events: list[RayServiceEvent]
    ) -> None:
        """raypilot.io/notify: the notifications of this change, sent in the background (nothing without
        the annotation or the cluster-wide default)."""
        annotations = (self._state.manifest.get("metadata") or {}).get("annotations") or {}
        self._notifier.notify(annotations, rayservice_notifications(before, after, events))

    # ---- handlers ------------------------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        body = status_query(self._state.status, self._state.serve_details)
        if self._state.revisions:
            body["revisions"] = revision_rows(self._state.revisions)  # beyond KubeRay (issue #18)
        return body

    @workflow.query(name="revisions")
    def revisions(self) -> list[dict[str, Any]]:
        """The revision history with each revision's manifest (`raypilot rollout history -o json`)."""
        return revision_rows(self._state.revisions, manifests=True)

    @workflow.signal(name=WATCH_UPGRADE_SIGNAL)
    async def watch_upgrade(self, watch: UpgradeWatch) -> None:
        """A workflow waiting for a generation's outcome (upgrade_rayservice, docs/contract.md §9)."""
        await self._watchers.watch(watch)

    @workflow.update(name="apply")
    def apply(self, manifest: dict[str, Any]) -> dict[str, int]:
        state = self._state
        state.generation = next_generation(state.manifest, manifest, state.generation)
        state.manifest = dict(manifest)
        self._changes += 1
        return {"generation": state.generation}

    @apply.validator
    def _validate_apply(self, manifest: dict[str, Any]) -> None:
        if self._state.deleting:
            raise _rejected("the RayService is being deleted")
        error = manifest_update_error(self._state.manifest, manifest, self._gates)
        if error is not None:
            raise _rejected(error)

    # ---- upgrade controls (docs/contract.md §3) ---------------------------------------------------------

    def _decide_control(self, control: str) -> tuple[UpgradeControls, RayServiceStatuses]:
        """The control's effect on the controls and the status (UpgradeControlRejected when it does not
        apply now). Pure: validators call it too."""
        state = self._state
        rayservice = rayservice_at(state.manifest, state.generation, state.status)
        decisions: dict[
            str, Callable[[UpgradeControls, Any, datetime], tuple[UpgradeControls, RayServiceStatuses]]
        ] = {
            "pause": pause_upgrade,
            "resume": resume_upgrade,
            "promote": promote_upgrade,
            "abort": lambda controls, service, now: abort_upgrade(
                controls, service, goal_cluster_hash(service.spec), now
            ),
        }
        return decisions[control](state.controls, rayservice, workflow.now())

    def _validate_control(self, control: str) -> None:
        if self._state.deleting:
            raise _control_rejected("the RayService is being deleted")
        try:
            self._decide_control(control)
        except UpgradeControlRejected as rejected:
            raise _control_rejected(str(rejected)) from None
        if control == "promote" and self._config is not None:
            state = self._state
            rayservice = rayservice_at(state.manifest, state.generation, state.status)
            incremental = is_incremental_upgrade_enabled(rayservice.spec, self._config)
            rejection = new_cluster_promote_rejection(rayservice, incremental)
            awaited = state.promotion_awaited
            if awaited and awaited == state.status.pending_service_status.ray_cluster_name:
                rejection = None  # raypilot.io/rollout autoPromotionEnabled: false waits for this promote
            if rejection is not None:
                raise _control_rejected(rejection)

    def _apply_control(self, control: str) -> dict[str, str]:
        controls, status = self._decide_control(control)
        self._notify(self._state.status, status, [])
        self._state.controls = controls
        self._state.status = status
        self._changes += 1
        message = next((c.message for c in status.conditions if c.type == UPGRADE_CONTROL_CONDITION), control)
        return {"control": control, "message": message}

    @workflow.update(name="pause")
    def pause(self) -> dict[str, str]:
        return self._apply_control("pause")

    @pause.validator
    def _validate_pause(self) -> None:
        self._validate_control("pause")

    @workflow.update(name="resume")
    def resume(self) -> dict[str, str]:
        return self._apply_control("resume")

    @resume.validator
    def _validate_resume(self) -> None:
        self._validate_control("resume")

    @workflow.update(name="promote")
    def promote(self) -> dict[str, str]:
        return self._apply_control("promote")

    @promote.validator
    def _validate_promote(self) -> None:
        self._validate_control("promote")

    @workflow.update(name="abort")
    def abort(self) -> dict[str, str]:
        return self._apply_control("abort")

    @abort.validator
    def _validate_abort(self) -> None:
        self._validate_control("abort")

    # ---- rollout undo and retry (issue #18): decided in rayservice/revisions.py --------------------------

    @workflow.update(name="undo")
    def undo(self, request: dict[str, Any] | None = None) -> dict[str, Any]:
        """Apply an earlier revision's manifest again as a new revision; in place when its cluster is up."""
        self._changes += 1
        return self._revisions.undo(request)

    @undo.validator
    def _validate_undo(self, request: dict[str, Any] | None = None) -> None:
        rejection = self._revisions.undo_rejection(request)
        if rejection is not None:
            raise _control_rejected(rejection)

    @workflow.update(name="retry")
    def retry(self) -> dict[str, str]:
        self._changes += 1
        return self._revisions.retry()

    @retry.validator
    def _validate_retry(self) -> None:
        state = self._state
        rejection = self._revisions.retry_rejection(
            rayservice_at(state.manifest, state.generation, state.status)
        )
        if rejection is not None:
            raise _control_rejected(rejection)

    @workflow.update(name="delete")
    async def delete(self, request: dict[str, Any] | None = None) -> dict[str, Any]:
        if not self._state.deleting:
            self._letting_go = lets_go_of_owned_objects(request)
        self._state.deleting = True
        self._changes += 1
        await workflow.wait_condition(lambda: self._deletion_done)
        deleted = [f"{ref.get('kind')}/{ref.get('name')}" for ref in self._deleted]
        return {"deleted": deleted, "orphaned": True} if self._letting_go else {"deleted": deleted}

    @delete.validator
    def _validate_delete(self, request: dict[str, Any] | None = None) -> None:
        error = deletion_request_error(request)
        if error is not None:
            raise _rejected(error)
