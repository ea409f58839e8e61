"""The controller's status write-back over a lagging visibility list (fakes for Kubernetes and Temporal):
a run the list does not show yet must not be remembered as closed, or its end is never written."""

from __future__ import annotations

from typing import Any, cast

from models.features import FeatureGates
from raypilot.controller.decide import CLOSED, FINALIZER
from raypilot.controller.kube import ControllerKube
from raypilot.controller.loop import Controller
from raypilot.controller.temporal_io import ControllerTemporal

KEY = ("RayJob", "team", "ended")
UID = "uid-ended"
WORKFLOW_ID = "rayjob/team/ended"
STARTING = {"jobDeploymentStatus": "Initializing", "jobStatus": ""}
COMPLETE = {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}


class FakeTemporal:
    """One run: what the visibility list shows of it and what the run itself answers."""

    def __init__(self) -> None:
        self.listed: dict[str, str] = {}
        self.answer: tuple[dict[str, Any], bool] = (STARTING, False)  # (status, run closed)
        self.reads = 0

    async def phases(self) -> dict[str, str]:
        return dict(self.listed)

    async def status(self, ref: Any, uid: str) -> tuple[dict[str, Any], bool] | None:
        self.reads += 1
        return self.answer


class FakeKube:
    def __init__(self, controller_objects: dict[Any, dict[str, Any]]) -> None:
        self.objects = controller_objects
        self.written: list[dict[str, Any]] = []

    def patch_status(self, obj: dict[str, Any], patch: dict[str, Any]) -> None:
        self.written.append(patch["status"])
        self.objects[KEY] = {**obj, "status": patch["status"]}  # as the watch would show it


def controller() -> tuple[Controller, FakeTemporal, FakeKube]:
    temporal = FakeTemporal()
    made = Controller(cast(ControllerKube, None), cast(ControllerTemporal, temporal), FeatureGates(), 1.0)
    kube = FakeKube(made.objects)
    made.kube = cast(ControllerKube, kube)
    made.objects[KEY] = {
        "kind": "RayJob",
        "metadata": {"name": "ended", "namespace": "team", "uid": UID, "finalizers": [FINALIZER]},
    }
    return made, temporal, kube


async def test_a_run_the_list_does_not_show_yet_has_its_end_written() -> None:
    made, temporal, kube = controller()
    # Tick 1: the run has started, but the visibility list does not show it yet (CLOSED to the controller).
    await made.write_back_statuses()
    assert kube.written == [STARTING]
    # The run ends before the list ever showed it running: the list says CLOSED again.
    temporal.answer = (COMPLETE, True)
    await made.write_back_statuses()
    assert kube.written == [STARTING, COMPLETE]
    # Read at CLOSED for a closed run: not read again while nothing changes.
    await made.write_back_statuses()
    assert temporal.reads == 2


async def test_a_listed_phase_is_read_once_until_it_changes() -> None:
    made, temporal, kube = controller()
    temporal.listed = {WORKFLOW_ID: "Running"}
    temporal.answer = ({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}, False)
    for _ in range(3):
        await made.write_back_statuses()
    assert temporal.reads == 1
    assert [status["jobDeploymentStatus"] for status in kube.written] == ["Running"]
    temporal.listed = {}
    temporal.answer = (COMPLETE, True)
    for _ in range(3):
        await made.write_back_statuses()
    assert temporal.reads == 2
    assert kube.written[-1] == COMPLETE
    assert made.seen_phase[UID] == CLOSED
