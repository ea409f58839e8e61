"""The revision history and fast undo in the RayService loop (issue #18).

Before each pass the spec the pass acts on is recorded as a revision (once per generation) and an accepted
in-place undo makes the previous cluster the pending one again; after each pass the newest revision is
settled from what the pass left (decisions/rayservice/upgrade/revisions.py). Neither adds a command: the
history is workflow state, and the moved cluster names are acted on by the pass.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.meta import find_condition, is_condition_true
    from models.naming import ANNOTATION_HASH
    from models.rayservice import RayService, RayServiceConditionType
    from models.rollout import rollout_settings
    from workflows.decisions.rayservice.cluster import goal_cluster_hash
    from workflows.decisions.rayservice.manifest import next_generation
    from workflows.decisions.rayservice.observed_clusters import cluster_names
    from workflows.decisions.rayservice.upgrade.retry import (
        retried_controls,
        retried_revisions,
        retry_rejection,
    )
    from workflows.decisions.rayservice.upgrade.revisions import (
        DEFAULT_REVISION_HISTORY_LIMIT,
        Revision,
        RevisionsSeen,
        record_revision,
        served_config,
        settle_revisions,
    )
    from workflows.decisions.rayservice.upgrade.undo import (
        UndoKind,
        UndoPlan,
        UndoRejected,
        UndoWorld,
        undo_plan,
        undo_target,
        with_reinstated_cluster,
    )
    from workflows.rayservice.state import RayServiceState
    from workflows.rayservice.world import RayServiceWorld

__all__ = ["RevisionKeeper"]


def _history_limit(rayservice: RayService) -> int:
    try:
        settings = rollout_settings(rayservice.metadata.annotations)
    except ValueError:
        settings = None  # never: a manifest is checked before it is accepted
    return settings.revision_history_limit if settings is not None else DEFAULT_REVISION_HISTORY_LIMIT


class RevisionKeeper:
    def __init__(self, state: RayServiceState) -> None:
        self.state = state

    def before_pass(self, rayservice: RayService, incremental: bool, now: datetime) -> None:
        """Records the spec about to be acted on; an accepted in-place undo takes its cluster back."""
        state = self.state
        state.revisions = record_revision(
            state.revisions,
            dict(state.manifest),
            state.generation,
            goal_cluster_hash(rayservice.spec),
            now,
            _history_limit(rayservice),
            state.undo_of,
        )
        state.undo_of = None
        if state.undo_cluster:
            cluster, state.undo_cluster = state.undo_cluster, ""
            if cluster in state.owned_clusters and cluster not in cluster_names(state.status):
                state.status = with_reinstated_cluster(state.status, cluster, incremental)
                served = served_config(state.revisions, cluster)
                if served:
                    state.serve_config_cache = {**state.serve_config_cache, cluster: served}
                if incremental:
                    state.controls = dataclasses.replace(state.controls, promote_requested=True)

    def after_pass(self, world: RayServiceWorld, now: datetime) -> None:
        state = self.state
        conditions = state.status.conditions
        active = state.status.active_service_status.ray_cluster_name
        body = (world.clusters.get(active) or {}) if active else {}
        annotations = (body.get("metadata") or {}).get("annotations") or {}
        rollback = find_condition(conditions, RayServiceConditionType.ROLLBACK_IN_PROGRESS)
        seen = RevisionsSeen(
            active_cluster=active,
            active_cluster_hash=str(annotations.get(ANNOTATION_HASH, "")),
            upgrading=is_condition_true(conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS),
            aborted_goal_hash=state.controls.aborted_goal_hash,
            now=now,
            rollback_reason=rollback.reason if rollback is not None and rollback.reason else "",
            active_serve_config=state.serve_config_cache.get(active, ""),
        )
        state.revisions = settle_revisions(state.revisions, seen)

    def _name(self) -> str:
        metadata = self.state.manifest.get("metadata") or {}
        return f"{metadata.get('namespace') or 'default'}/{metadata.get('name') or ''}"

    def _plan_undo(self, request: dict[str, Any] | None) -> tuple[Revision, UndoPlan]:
        """The revision an undo goes back to and how (UndoRejected when it does not apply). Changes
        nothing: the validator asks it too."""
        state = self.state
        to_revision = (request or {}).get("toRevision")
        if to_revision is not None and (
            not isinstance(to_revision, int) or isinstance(to_revision, bool) or to_revision < 1
        ):
            raise UndoRejected(f"undo rejected: toRevision must be a revision number, got {to_revision!r}")
        target = undo_target(state.revisions, to_revision, self._name())
        active, pending = cluster_names(state.status)
        upgrading = bool(pending) or is_condition_true(
            state.status.conditions, RayServiceConditionType.UPGRADE_IN_PROGRESS
        )
        # A cluster kept for debugging after an abort is never taken back (abortScaleDownDelaySeconds).
        live = [name for name in state.owned_clusters if name not in state.kept_for_debugging]
        return target, undo_plan(target, UndoWorld(active, live, upgrading))

    def undo_rejection(self, request: dict[str, Any] | None) -> str | None:
        if self.state.deleting:
            return "undo rejected: the RayService is being deleted"
        try:
            self._plan_undo(request)
        except UndoRejected as rejected:
            return str(rejected)
        return None

    def undo(self, request: dict[str, Any] | None) -> dict[str, Any]:
        """The accepted undo: the revision's manifest becomes the desired one (a new generation, recorded as
        a new revision by the next pass), and an in-place undo's cluster is taken back at that pass."""
        state = self.state
        target, plan = self._plan_undo(request)
        state.generation = next_generation(state.manifest, target.manifest, state.generation)
        state.manifest = dict(target.manifest)
        state.undo_of = target.number
        state.undo_cluster = plan.cluster if plan.kind == UndoKind.IN_PLACE else ""
        # Going back to a revision that was aborted asks for it again: its goal is no longer suppressed.
        state.controls = dataclasses.replace(state.controls, aborted_goal_hash=None)
        return {"revision": target.number, "how": plan.kind.value, "message": plan.message}

    def retry_rejection(self, rayservice: RayService) -> str | None:
        if self.state.deleting:
            return "retry rejected: the RayService is being deleted"
        state = self.state
        return retry_rejection(state.controls, state.status, goal_cluster_hash(rayservice.spec), self._name())

    def retry(self) -> dict[str, str]:
        state = self.state
        state.controls = retried_controls(state.controls)
        state.revisions = retried_revisions(state.revisions)
        message = "Retry: the aborted upgrade starts again on a new cluster."
        return {"control": "retry", "message": message}
