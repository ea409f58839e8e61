"""What the controller does with one raypilot.io object, decided from what it sees (pure, table-tested).

One object drives one workflow (id `rayjob|rayservice/<ns>/<name>`), and one workflow run serves one object
uid: the run's memo records the uid (`raypilot.io/object-uid`), so a re-created object (new uid) gets a new
run while a completed run of the same object is never repeated (issue #22's rule, decided for the CLI by
`workflows.decisions.rayjob.object`). The generation the controller last handed to the workflow is kept on
the object (`raypilot.io/applied-generation`, as `<uid>/<generation>`: an annotation copied onto a re-created
object does not count), so a restarted controller neither repeats nor skips an apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from models.crd import PRINTER_COLUMNS
from workflows.decisions.rayjob.driver_log import DRIVER_LOG_CONDITION
from workflows.decisions.rayjob.object import RunState, holds_object

FINALIZER: Final = "raypilot.io/finalizer"
# Kubernetes' own finalizer on an object deleted with the Orphan propagation policy (`kubectl delete
# --cascade=orphan`): on it while the garbage collector takes the object's ownerReferences off its dependents.
ORPHAN_FINALIZER: Final = "orphan"
ANNOTATION_APPLIED_GENERATION: Final = "raypilot.io/applied-generation"
MEMO_OBJECT_UID: Final = "raypilot.io/object-uid"
CLOSED: Final = "<closed>"  # the phase of a workflow the visibility list no longer shows running


class Action(StrEnum):
    NOTHING = "nothing"
    ADD_FINALIZER = "add-finalizer"
    REJECT = "reject"  # ValidationFailed condition and a Warning Event; nothing is created
    START_OR_APPLY = "start-or-apply"  # update-with-start
    REPLACE_RUN = "replace-run"  # an earlier object's run holds the id: delete it, then start
    DELETE_WORKFLOW = "delete-workflow"  # the `delete` update; the finalizer stays until the run closed
    LET_GO = "let-go"  # a RayService deleted with --cascade=orphan: the `delete` update with that policy
    DELETE_FINISHED = "delete-finished"  # what `raypilot delete` does to a finished RayJob
    RELEASE = "release"  # remove the finalizer: the object may go


@dataclass(frozen=True)
class ObjectView:
    kind: str
    uid: str
    generation: int
    applied_generation: int
    deleting: bool
    has_finalizer: bool
    orphaning: bool = False  # deleted with the Orphan propagation policy (`--cascade=orphan`)


@dataclass(frozen=True)
class RunView:
    """The latest workflow run of the object's id; object_uid None: started without an object (the CLI)."""

    state: RunState
    outcome: str | None = None
    object_uid: str | None = None


def same_object(obj: ObjectView, run: RunView) -> bool:
    return run.object_uid is None or run.object_uid == obj.uid


def reconcile_action(obj: ObjectView, run: RunView | None, *, valid: bool) -> Action:
    if obj.deleting:
        return _deletion_action(obj, run)
    if not obj.has_finalizer:
        return Action.ADD_FINALIZER
    up_to_date = obj.applied_generation >= obj.generation
    if not valid:
        return Action.NOTHING if up_to_date else Action.REJECT
    if run is None:
        # No run of this generation any more: a RayJob's finished run past Temporal's retention stays
        # finished (never run again); a RayService's workflow runs until deleted, so it is started again.
        return Action.NOTHING if up_to_date and obj.kind == "RayJob" else Action.START_OR_APPLY
    if not same_object(obj, run):
        # The id's run belongs to an earlier object of that name (deleted without its finalizer running).
        return (
            Action.REPLACE_RUN if _holds(obj, run) or run.state == RunState.RUNNING else Action.START_OR_APPLY
        )
    if run.state == RunState.RUNNING:
        return Action.NOTHING if up_to_date else Action.START_OR_APPLY
    if _holds(obj, run):
        return Action.NOTHING  # a finished RayJob stays finished; KubeRay ignores its spec changes
    # Deleted by the CLI, failed, terminated: run again only for a new generation, never in a loop.
    return Action.NOTHING if up_to_date else Action.START_OR_APPLY


def _holds(obj: ObjectView, run: RunView) -> bool:
    return obj.kind == "RayJob" and run.state == RunState.COMPLETED and holds_object(run.state, run.outcome)


def _deletion_action(obj: ObjectView, run: RunView | None) -> Action:
    if not obj.has_finalizer:
        return Action.NOTHING
    if run is None or not same_object(obj, run):
        return Action.RELEASE
    if run.state == RunState.RUNNING:
        # KubeRay's RayJob stops its Ray job on deletion whatever the propagation: a RayJob is deleted.
        return Action.LET_GO if obj.orphaning and obj.kind == "RayService" else Action.DELETE_WORKFLOW
    if _holds(obj, run):
        return Action.DELETE_FINISHED
    return Action.RELEASE


# ---- status write-back -------------------------------------------------------------------------------------


def printer_column_values(kind: str, status: dict[str, Any]) -> tuple[Any, ...]:
    """What `kubectl get` shows of the status: the value at each `.status...` printer column of the CRD
    (models.crd.PRINTER_COLUMNS; a RayJob: job status, deployment status, cluster, start and end time; a
    RayService: service status, serve endpoints, active and pending cluster)."""
    values: list[Any] = []
    for column in PRINTER_COLUMNS[kind]:
        path = column.json_path.split(".")[1:]
        if path[0] != "status":
            continue
        value: Any = status
        for key in path[1:]:
            value = value.get(key) if isinstance(value, dict) else None
        values.append(value)
    return tuple(values)


def _driver_log(status: dict[str, Any]) -> tuple[Any, ...] | None:
    """A RayJob status' DriverLogSaved condition (docs/logs.md) as far as it is news."""
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == DRIVER_LOG_CONDITION:
            return (condition.get("status"), condition.get("reason"), condition.get("message"))
    return None


def should_write_status(kind: str, written: dict[str, Any] | None, current: dict[str, Any]) -> bool:
    """Whether the workflow's status goes to the object's status subresource: when what `kubectl get` shows
    changed, or a RayJob saved a failed attempt's driver log (what `kubectl describe` shows after teardown),
    and on nothing else (a newer message, condition time or observation alone is not written)."""
    if written is None or printer_column_values(kind, written) != printer_column_values(kind, current):
        return True
    return kind == "RayJob" and _driver_log(written) != _driver_log(current)


def phase_read_at(listed_phase: str, run_closed: bool) -> str | None:
    """The phase a status just read is remembered at (it is read again only once the listed phase differs):
    the listed one, unless the list showed the run closed while it still ran. Visibility lags behind a run
    that has just started; remembering CLOSED then would skip the read of its real end for good, because
    the list shows CLOSED again once it ends. None: remember nothing, read again on the next tick."""
    if listed_phase == CLOSED and not run_closed:
        return None
    return listed_phase


def status_patch(written: dict[str, Any] | None, current: dict[str, Any]) -> dict[str, Any]:
    """A JSON merge patch of `.status` that makes it `current` (keys no longer present are removed)."""
    removed = {key: None for key in (written or {}) if key not in current}
    return {"status": {**removed, **current}}
