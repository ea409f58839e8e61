"""getAndCheckServeStatus (KubeRay's table) plus raypilot's replica rule, target capacity check and ranks."""

from __future__ import annotations

from typing import Any

import pytest

from workflows.decisions.rayservice.serve_status import (
    ServeApplication,
    ServeDeployment,
    ServeDetails,
    ServeReplica,
    check_serve_status,
    parse_serve_details,
    replica_ranks_summary,
    runs_target_capacity,
)


def details(
    app_status: str, deployment_status: str = "HEALTHY", running: int = 1, target: int = 1
) -> ServeDetails:
    replicas = tuple(ServeReplica(f"r{i}", "RUNNING") for i in range(running))
    deployment = ServeDeployment("d", deployment_status, target_num_replicas=target, replicas=replicas)
    return ServeDetails(
        (ServeApplication("app", app_status, deployments=(deployment,)),), target_capacity=None
    )


@pytest.mark.parametrize(
    ("serve", "kuberay_ready"),
    [
        (details("DEPLOYING", "UPDATING"), False),
        (details("RUNNING", "HEALTHY"), True),
        (details("UNHEALTHY", "UNHEALTHY"), False),
        (details("DEPLOY_FAILED", "UPDATING"), False),
        (ServeDetails(), False),  # no applications
    ],
)
def test_get_and_check_serve_status(serve: ServeDetails, kuberay_ready: bool) -> None:
    readiness = check_serve_status(serve)
    assert readiness.kuberay_ready is kuberay_ready
    assert readiness.ready is kuberay_ready
    for app in serve.applications:
        status = readiness.application_statuses[app.name]
        assert status.status == app.status
        assert status.serve_deployment_statuses["d"].status == app.deployments[0].status


def test_running_apps_are_not_ready_until_every_deployment_runs_its_replicas() -> None:
    readiness = check_serve_status(details("RUNNING", running=1, target=3))
    assert readiness.kuberay_ready is True
    assert readiness.replicas_ready is False
    assert readiness.ready is False
    assert readiness.waiting_for == "deployment app/d runs 1/3 replicas"


def test_parse_serve_details() -> None:
    body: dict[str, Any] = {
        "applications": {
            "": {
                "status": "RUNNING",
                "message": "",
                "deployments": {
                    "Model": {
                        "status": "HEALTHY",
                        "target_num_replicas": 2,
                        "replicas": [
                            {
                                "replica_id": "a",
                                "state": "RUNNING",
                                "rank": {"rank": 1, "node_rank": 0, "local_rank": 1},
                            },
                            {"replica_id": "b", "state": "STARTING", "rank": 0, "world_size": 4},
                        ],
                        "unknown_key": True,
                    }
                },
            }
        },
        "target_capacity": 50.0,
        "controller_info": {},
    }
    parsed = parse_serve_details(body)
    assert parsed.target_capacity == 50.0
    app = parsed.applications[0]
    assert app.name == "default"  # "" is reported as "default"
    model = app.deployments[0]
    assert (model.name, model.target_num_replicas, model.running_replicas) == ("Model", 2, 1)
    assert model.replicas[0] == ServeReplica("a", "RUNNING", rank=1, node_rank=0, local_rank=1)
    assert model.replicas[1] == ServeReplica("b", "STARTING", rank=0, world_size=4)
    assert parse_serve_details({"applications": {}, "target_capacity": None}) == ServeDetails()


@pytest.mark.parametrize(
    ("reported", "expected_capacity", "running", "target", "expected"),
    [
        (50.0, 50, 2, 2, True),
        (None, None, 2, 2, True),  # None means 100 on both sides
        (None, 100, 2, 2, True),
        (0.0, 50, 2, 2, False),  # the PUT was accepted but Serve did not apply it yet
        (50.0, 50, 1, 2, False),  # replicas still starting
    ],
)
def test_runs_target_capacity(
    reported: float | None, expected_capacity: int | None, running: int, target: int, expected: bool
) -> None:
    serve = details("RUNNING", running=running, target=target)
    serve = ServeDetails(serve.applications, target_capacity=reported)
    assert runs_target_capacity(serve, expected_capacity) is expected


def ranked(*ranks: int | None, state: str = "RUNNING") -> tuple[ServeReplica, ...]:
    return tuple(ServeReplica(f"r{i}", state, rank=rank, world_size=4) for i, rank in enumerate(ranks))


@pytest.mark.parametrize(
    ("replicas", "ranks", "contiguous"),
    [
        (ranked(2, 0, 1, 3), (0, 1, 2, 3), True),
        (ranked(0, 2), (0, 2), False),  # after a scale-down, before Serve reassigns
        (ranked(0, None), (0,), False),  # a running replica without a rank
        (ranked(1, state="STOPPING") + ranked(0), (0,), True),  # only RUNNING replicas count
        ((), (), True),
    ],
)
def test_replica_ranks_summary(
    replicas: tuple[ServeReplica, ...], ranks: tuple[int, ...], contiguous: bool
) -> None:
    deployment = ServeDeployment("Shard", "HEALTHY", target_num_replicas=len(ranks), replicas=replicas)
    serve = ServeDetails((ServeApplication("app", "RUNNING", deployments=(deployment,)),))
    (summary,) = replica_ranks_summary(serve)
    assert (summary.application, summary.deployment) == ("app", "Shard")
    assert summary.ranks == ranks
    assert summary.ranks_contiguous is contiguous
    assert summary.world_size == (4 if replicas else None)
