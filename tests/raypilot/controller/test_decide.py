"""The controller's decisions, as tables: what it does with an object, and when it writes a status back."""

from __future__ import annotations

from typing import Any

import pytest

from raypilot.controller.decide import (
    CLOSED,
    Action,
    ObjectView,
    RunView,
    phase_read_at,
    reconcile_action,
    should_write_status,
    status_patch,
)
from workflows.decisions.rayjob.object import RunState

UID = "uid-1"


def obj(
    kind: str = "RayJob",
    *,
    gen: int = 1,
    applied: int = 0,
    deleting: bool = False,
    fin: bool = True,
    orphaning: bool = False,
) -> ObjectView:
    return ObjectView(kind, UID, gen, applied, deleting, fin, orphaning)


RUNNING = RunView(RunState.RUNNING, None, UID)
FINISHED = RunView(RunState.COMPLETED, "finished", UID)
DELETED = RunView(RunState.COMPLETED, "deleted", UID)
FAILED = RunView(RunState.FAILED, None, UID)
OTHER_FINISHED = RunView(RunState.COMPLETED, "finished", "uid-0")
OTHER_RUNNING = RunView(RunState.RUNNING, None, "uid-0")
CLI_RUNNING = RunView(RunState.RUNNING, None, None)


@pytest.mark.parametrize(
    ("view", "run", "valid", "expected"),
    [
        # the finalizer first, so that a deletion always goes through the workflow
        (obj(fin=False), None, True, Action.ADD_FINALIZER),
        (obj(fin=False), None, False, Action.ADD_FINALIZER),
        # a rejected spec: once per generation
        (obj(), None, False, Action.REJECT),
        (obj(applied=1), None, False, Action.NOTHING),
        (obj(gen=2, applied=1), RUNNING, False, Action.REJECT),
        # start, apply a new generation, nothing for one applied already (a restarted controller)
        (obj(), None, True, Action.START_OR_APPLY),
        (obj(applied=1), None, True, Action.NOTHING),  # a finished run past Temporal's retention
        (obj("RayService", applied=1), None, True, Action.START_OR_APPLY),  # runs until deleted
        (obj(), RUNNING, True, Action.START_OR_APPLY),
        (obj(applied=1), RUNNING, True, Action.NOTHING),
        (obj(gen=2, applied=1), RUNNING, True, Action.START_OR_APPLY),
        (obj(applied=1), CLI_RUNNING, True, Action.NOTHING),  # a run `raypilot apply` started is taken over
        # issue 22: a finished RayJob is never run again, not even for a changed spec
        (obj(applied=1), FINISHED, True, Action.NOTHING),
        (obj(gen=2, applied=1), FINISHED, True, Action.NOTHING),
        # a run that failed or was deleted by the CLI: again only for a new generation
        (obj(applied=1), FAILED, True, Action.NOTHING),
        (obj(gen=2, applied=1), FAILED, True, Action.START_OR_APPLY),
        (obj(applied=1), DELETED, True, Action.NOTHING),
        (obj("RayService", applied=1), RunView(RunState.COMPLETED, None, UID), True, Action.NOTHING),
        # a re-created object (new uid): the earlier object's run makes way
        (obj(), OTHER_FINISHED, True, Action.REPLACE_RUN),
        (obj(), OTHER_RUNNING, True, Action.REPLACE_RUN),
        (obj(), RunView(RunState.COMPLETED, "deleted", "uid-0"), True, Action.START_OR_APPLY),
        # deletion: through the workflow, then the finalizer goes
        (obj(deleting=True), RUNNING, True, Action.DELETE_WORKFLOW),
        (obj(deleting=True), FINISHED, True, Action.DELETE_FINISHED),
        (obj(deleting=True), DELETED, True, Action.RELEASE),
        (obj(deleting=True), None, True, Action.RELEASE),
        (obj(deleting=True), OTHER_RUNNING, True, Action.RELEASE),  # not this object's run
        (obj(deleting=True, fin=False), RUNNING, True, Action.NOTHING),
        (obj("RayService", deleting=True), RUNNING, True, Action.DELETE_WORKFLOW),
        (obj("RayService", deleting=True), RunView(RunState.COMPLETED, None, UID), True, Action.RELEASE),
        # --cascade=orphan: a RayService's run lets go of its clusters; a RayJob is deleted as in KubeRay
        (obj("RayService", deleting=True, orphaning=True), RUNNING, True, Action.LET_GO),
        (obj("RayService", deleting=True, orphaning=True), DELETED, True, Action.RELEASE),
        (obj(deleting=True, orphaning=True), RUNNING, True, Action.DELETE_WORKFLOW),
    ],
)
def test_reconcile_action(view: ObjectView, run: RunView | None, valid: bool, expected: Action) -> None:
    assert reconcile_action(view, run, valid=valid) == expected


JOB_RUNNING = {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "rayClusterName": "a-x"}
DRIVER_LOG = {
    "type": "DriverLogSaved",
    "status": "True",
    "reason": "TailSaved",
    "message": "Ray job j-1: ...",
}
SERVICE = {
    "serviceStatus": "Running",
    "numServeEndpoints": 1,
    "activeServiceStatus": {"rayClusterName": "s-a", "applicationStatuses": {"app": {"status": "RUNNING"}}},
    "conditions": [{"type": "Ready", "status": "True", "message": "one", "lastTransitionTime": "t1"}],
}


@pytest.mark.parametrize(
    ("kind", "written", "current", "expected"),
    [
        ("RayJob", None, JOB_RUNNING, True),
        ("RayJob", JOB_RUNNING, JOB_RUNNING, False),
        (
            "RayJob",
            JOB_RUNNING,
            {**JOB_RUNNING, "jobStatus": "SUCCEEDED", "jobDeploymentStatus": "Complete"},
            True,
        ),
        ("RayJob", JOB_RUNNING, {**JOB_RUNNING, "message": "a newer message"}, False),  # not shown
        ("RayJob", {**JOB_RUNNING, "jobStatus": "PENDING"}, JOB_RUNNING, True),  # within Running
        ("RayJob", JOB_RUNNING, {**JOB_RUNNING, "endTime": "2026-01-01T00:00:00Z"}, True),
        ("RayJob", JOB_RUNNING, {**JOB_RUNNING, "succeeded": 1, "reason": "AppFailed"}, False),
        # A failed attempt's saved driver log: after teardown it is what the object's status holds of it.
        ("RayJob", JOB_RUNNING, {**JOB_RUNNING, "conditions": [DRIVER_LOG]}, True),
        (
            "RayJob",
            {**JOB_RUNNING, "conditions": [DRIVER_LOG]},
            {**JOB_RUNNING, "conditions": [DRIVER_LOG]},
            False,
        ),
        (
            "RayJob",
            {**JOB_RUNNING, "conditions": [DRIVER_LOG]},
            {
                **JOB_RUNNING,
                "conditions": [{**DRIVER_LOG, "message": "Ray job j-2: ...", "reason": "Stored"}],
            },
            True,
        ),
        (
            "RayJob",
            JOB_RUNNING,
            {**JOB_RUNNING, "conditions": [{"type": "RayJobAttempt", "status": "True"}]},
            False,
        ),
        (
            "RayService",
            SERVICE,
            {**SERVICE, "conditions": [{**SERVICE["conditions"][0], "message": "two"}]},
            False,
        ),
        ("RayService", SERVICE, {**SERVICE, "pendingServiceStatus": {"rayClusterName": "s-b"}}, True),
        ("RayService", SERVICE, {**SERVICE, "numServeEndpoints": 2}, True),
        ("RayService", SERVICE, {**SERVICE, "serviceStatus": ""}, True),
        # Conditions are not shown: the Ready condition shows as serviceStatus.
        ("RayService", SERVICE, {**SERVICE, "conditions": [{"type": "Ready", "status": "False"}]}, False),
    ],
)
def test_should_write_status(
    kind: str, written: dict[str, Any] | None, current: dict[str, Any], expected: bool
) -> None:
    assert should_write_status(kind, written, current) == expected


@pytest.mark.parametrize(
    ("listed", "run_closed", "expected"),
    [
        ("Running", False, "Running"),
        ("Complete/SUCCEEDED", False, "Complete/SUCCEEDED"),
        (CLOSED, True, CLOSED),
        (CLOSED, False, None),  # the list is behind a run that has just started: read again next tick
        ("Running", True, "Running"),  # the list is behind a run that has just ended: differs next tick
    ],
)
def test_phase_read_at(listed: str, run_closed: bool, expected: str | None) -> None:
    assert phase_read_at(listed, run_closed) == expected


def test_status_patch_removes_what_is_gone() -> None:
    patch = status_patch({"jobStatus": "RUNNING", "reason": "x"}, {"jobStatus": "SUCCEEDED"})
    assert patch == {"status": {"reason": None, "jobStatus": "SUCCEEDED"}}


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [(None, 0), ("uid-1/3", 3), ("uid-0/3", 0), ("3", 0), ("uid-1/x", 0)],
)
def test_applied_generation_counts_only_for_the_same_object(annotation: str | None, expected: int) -> None:
    from raypilot.controller.objects import applied_generation

    annotations = {} if annotation is None else {"raypilot.io/applied-generation": annotation}
    assert applied_generation(annotations, UID) == expected
