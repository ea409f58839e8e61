"""raypilot.io/in-place-restart: the roll plan (worker groups in order, then the head), each step decided from
the Pods and Serve's readiness, desired Pods per group, and the condition."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from models.meta import ConditionStatus, find_condition
from models.raycluster import RayClusterSpec
from models.rayservice import RayServiceStatuses
from tests.workflows.decisions.rayservice.conditions import the_condition
from workflows.decisions.rayservice.pod_restart import (
    PodRestart,
    desired_pods_per_group,
    next_pod_restart_check,
    next_pod_restart_step,
    pod_restart_plan,
    roll_moved_on,
    wants_in_place_restart,
    with_pod_restart_condition,
)

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
SPEC = RayClusterSpec.model_validate(
    {
        "headGroupSpec": {"template": {}},
        "workerGroupSpecs": [
            {"groupName": "cpu", "replicas": 2, "minReplicas": 0, "maxReplicas": 5, "template": {}},
            {
                "groupName": "gpu",
                "replicas": 9,
                "minReplicas": 1,
                "maxReplicas": 3,
                "numOfHosts": 2,
                "template": {},
            },
            {"groupName": "off", "replicas": 2, "suspend": True, "template": {}},
        ],
    }
)


def pod(name: str, group: str, *, ready: bool = True, deleting: bool = False) -> dict[str, Any]:
    labels = {"ray.io/node-type": "head"} if group == "headgroup" else {"ray.io/node-type": "worker"}
    labels["ray.io/group"] = group
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "labels": labels}
    if deleting:
        metadata["deletionTimestamp"] = "2026-11-25T12:00:00Z"
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": metadata, "status": {"phase": "Running", "conditions": conditions}}


@pytest.mark.parametrize(
    ("annotations", "wanted"),
    [
        ({"raypilot.io/in-place-restart": "true"}, True),
        ({"raypilot.io/in-place-restart": " True "}, True),
        ({"raypilot.io/in-place-restart": "false"}, False),
        ({}, False),
    ],
)
def test_wants_in_place_restart(annotations: dict[str, str], wanted: bool) -> None:
    assert wants_in_place_restart(annotations) is wanted


def test_the_plan_is_the_worker_groups_in_order_then_the_head() -> None:
    assert pod_restart_plan("c", "h", SPEC) == PodRestart("c", "h", ("cpu", "gpu", "off", "headgroup"))
    assert desired_pods_per_group(SPEC) == {"headgroup": 1, "cpu": 2, "gpu": 6, "off": 0}


PLAN = PodRestart("c", "h", ("cpu", "headgroup"))
CPU_DELETED = PodRestart("c", "h", ("cpu", "headgroup"), 0, ("uid-c1", "uid-c2"))
HEAD_DELETED = PodRestart("c", "h", ("cpu", "headgroup"), 1, ("uid-h1",))
DESIRED = {"cpu": 2, "headgroup": 1}
OLD = [pod("h1", "headgroup"), pod("c1", "cpu"), pod("c2", "cpu")]


@pytest.mark.parametrize(
    ("restart", "pods", "serve_ready", "deleted", "next_restart", "events"),
    [
        # The first group's Pods are deleted together (one being deleted already is left alone).
        (PLAN, OLD, True, ("c1", "c2"), CPU_DELETED, ("RestartingPods",)),
        (PLAN, [*OLD[:2], pod("c2", "cpu", deleting=True)], True, ("c1",), "c1-only", ("RestartingPods",)),
        # Waiting: an old Pod is still there, a new one is not ready, or Serve is not RUNNING again.
        (CPU_DELETED, [OLD[0], pod("c2", "cpu", deleting=True), pod("n1", "cpu")], True, (), CPU_DELETED, ()),
        (CPU_DELETED, [OLD[0], pod("n1", "cpu"), pod("n2", "cpu", ready=False)], True, (), CPU_DELETED, ()),
        (CPU_DELETED, [OLD[0], pod("n1", "cpu"), pod("n2", "cpu")], False, (), CPU_DELETED, ()),
        # The group runs its new Pods and Serve is back: on to the head.
        (
            CPU_DELETED,
            [OLD[0], pod("n1", "cpu"), pod("n2", "cpu")],
            True,
            (),
            PodRestart("c", "h", ("cpu", "headgroup"), 1),
            ("RestartedPods",),
        ),
        # The head replaced and Serve RUNNING: done.
        (
            HEAD_DELETED,
            [pod("h2", "headgroup"), pod("n1", "cpu"), pod("n2", "cpu")],
            True,
            (),
            None,
            ("RestartedPods", "InPlaceRestartComplete"),
        ),
        (HEAD_DELETED, [pod("h2", "headgroup", ready=False), pod("n1", "cpu")], True, (), HEAD_DELETED, ()),
    ],
)
def test_next_pod_restart_step(
    restart: PodRestart,
    pods: list[dict[str, Any]],
    serve_ready: bool,
    deleted: tuple[str, ...],
    next_restart: PodRestart | str | None,
    events: tuple[str, ...],
) -> None:
    step = next_pod_restart_step(restart, pods, DESIRED, serve_ready, "ns")
    assert tuple(name for name, _ in step.delete) == deleted
    assert all(uid == f"uid-{name}" for name, uid in step.delete)
    if next_restart == "c1-only":
        assert step.restart == PodRestart("c", "h", ("cpu", "headgroup"), 0, ("uid-c1",))
    else:
        assert step.restart == next_restart
    assert tuple(event.reason for event in step.events) == events
    assert "RayCluster ns/c" in step.message


def test_a_group_without_pods_is_skipped() -> None:
    step = next_pod_restart_step(PodRestart("c", "h", ("off", "headgroup")), OLD, {"off": 0}, True, "ns")
    assert step.restart == PodRestart("c", "h", ("off", "headgroup"), 1)
    assert step.delete == ()


def test_the_condition_follows_the_roll() -> None:
    running = with_pod_restart_condition(RayServiceStatuses(), True, "restarting cpu", NOW)
    condition = the_condition(running.conditions, "InPlaceRestart")
    assert (condition.status, condition.reason, condition.message) == (
        ConditionStatus.TRUE,
        "RestartingPods",
        "restarting cpu",
    )
    done = with_pod_restart_condition(running, False, "every Pod restarted", NOW)
    condition = the_condition(done.conditions, "InPlaceRestart")
    assert (condition.status, condition.reason) == (ConditionStatus.FALSE, "RestartComplete")
    assert (
        find_condition(with_pod_restart_condition(done, False, "", NOW).conditions, "InPlaceRestart") is None
    )


ROLL = PodRestart("c", "h", ("cpu", "gpu", "headgroup"))


@pytest.mark.parametrize(
    ("after", "moved_on"),
    [
        (
            PodRestart("c", "h", ("cpu", "gpu", "headgroup"), replaced=("u1",)),
            False,
        ),  # Pods deleted: a wait wakes
        (ROLL, False),  # still waiting for the group
        (
            PodRestart("c", "h", ("cpu", "gpu", "headgroup"), step=1),
            True,
        ),  # next group: the next pass at once
        (None, False),  # the roll is over
    ],
)
def test_roll_moved_on_table(after: PodRestart | None, moved_on: bool) -> None:
    assert roll_moved_on(ROLL, after) is moved_on


@pytest.mark.parametrize(
    ("restarting", "waits_report", "check_at"),
    [
        (True, True, None),  # the Pods and Serve waits wake the roll: no timer
        (True, False, NOW + timedelta(seconds=2)),  # before the patch, or a wait failed: the 2 s poll
        (False, False, None),
        (False, True, None),
    ],
)
def test_next_pod_restart_check_table(
    restarting: bool, waits_report: bool, check_at: datetime | None
) -> None:
    assert next_pod_restart_check(restarting, waits_report, NOW) == check_at
