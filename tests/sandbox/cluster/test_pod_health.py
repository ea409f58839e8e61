"""KubeRay's shouldDeletePod table (reference section 7, Test_ShouldDeletePod) plus the by-name lookup."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.controllers.pod_health import ray_container_terminated_state, should_delete_pod


def ray_pod(
    restart_policy: str, phase: str, ray_state: str | None, *, sidecar_first_in_status: bool = False
) -> dict[str, Any]:
    statuses: list[dict[str, Any]] = []
    if ray_state == "running":
        statuses.append({"name": "ray-head", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}})
    elif ray_state == "terminated":
        statuses.append({"name": "ray-head", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}})
    sidecar = {"name": "sidecar", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
    statuses = [sidecar, *statuses] if sidecar_first_in_status else [*statuses, sidecar]
    return {
        "metadata": {"name": "c-head-abcde", "labels": {"ray.io/node-type": "head"}},
        "spec": {"restartPolicy": restart_policy, "containers": [{"name": "ray-head"}, {"name": "sidecar"}]},
        "status": {"phase": phase, "containerStatuses": statuses},
    }


@pytest.mark.parametrize(
    ("restart_policy", "phase", "ray_state", "expected"),
    [
        ("Always", "Failed", None, True),
        ("Always", "Running", "running", False),
        ("Always", "Running", "terminated", False),
        ("Never", "Failed", None, True),
        ("Never", "Succeeded", None, True),
        ("Never", "Running", "running", False),
        ("Never", "Running", "terminated", True),
        ("OnFailure", "Running", "terminated", False),
        ("Never", "Pending", None, False),
        ("Always", "Succeeded", "terminated", True),
    ],
)
def test_should_delete_pod_table(
    restart_policy: str, phase: str, ray_state: str | None, expected: bool
) -> None:
    delete, reason = should_delete_pod(ray_pod(restart_policy, phase, ray_state))
    assert delete is expected
    assert "c-head-abcde" in reason


def test_ray_container_is_found_by_name_not_position() -> None:
    pod = ray_pod("Never", "Running", "terminated", sidecar_first_in_status=True)
    assert ray_container_terminated_state(pod) == {"exitCode": 1, "reason": "Error"}
    assert should_delete_pod(pod)[0] is True


def test_sidecar_terminated_does_not_count_as_ray_container() -> None:
    pod = ray_pod("Never", "Running", "running")
    pod["status"]["containerStatuses"][1]["state"] = {"terminated": {"exitCode": 0}}
    assert ray_container_terminated_state(pod) is None
    assert should_delete_pod(pod)[0] is False


def test_missing_container_statuses_means_unknown_not_terminated() -> None:
    pod = ray_pod("Never", "Running", None)
    pod["status"].pop("containerStatuses")
    assert should_delete_pod(pod)[0] is False


def test_unset_restart_policy_defaults_to_always() -> None:
    pod = ray_pod("Never", "Running", "terminated")
    del pod["spec"]["restartPolicy"]
    assert should_delete_pod(pod)[0] is False
