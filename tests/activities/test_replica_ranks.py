"""Reading Serve replica ranks through a Ray job: the driver's output parsed, and the activity against a
simulated head (which answers the driver from its Serve state), through the API server's service proxy."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities.dashboard import DashboardActivities
from activities.dashboard_client import DashboardClient
from activities.driver_jobs import remove_job
from activities.registry import ActivityDependencies
from activities.replica_ranks import (
    RANKS_ENTRYPOINT,
    RANKS_MARKER,
    ReplicaRankActivities,
    parse_ranks_output,
    ranks_job_request,
)
from activities.waits import DashboardWaits
from sandbox.ray.simulated_serve import RANKS_DRIVER_CALL, RANKS_OUTPUT_PREFIX
from tests.activities.conftest import (
    ActivityKube,
    RecordingEnvironment,
    ready_raycluster,
    versioned_serve_config,
)
from wire.dashboard import (
    DashboardTarget,
    PutServeConfig,
    RayJobKey,
    ReadReplicaRanks,
    SubmitJob,
    WaitServe,
)

pytestmark = pytest.mark.timeout(60)


def test_the_simulated_head_recognises_the_driver_and_prints_the_same_marker() -> None:
    assert RANKS_DRIVER_CALL in RANKS_ENTRYPOINT
    assert RANKS_MARKER == RANKS_OUTPUT_PREFIX
    request = ranks_job_request("raypilot-replica-ranks-x")
    assert request["submission_id"] == "raypilot-replica-ranks-x"
    assert request["entrypoint"].startswith("python -c ")


@pytest.mark.parametrize(
    ("logs", "expected"),
    [
        ("", None),
        ("2026-01-01 INFO worker.py -- Connecting to existing Ray cluster\n", None),
        (f"{RANKS_MARKER}not json\n", None),
        (f"{RANKS_MARKER}[1, 2]\n", None),
        (
            f'INFO something\n{RANKS_MARKER}{{"app": {{"M": {{"r1": [0, 0, 0], "r2": [1, null, null]}}}}}}\n',
            {"app": {"M": {"r1": [0, 0, 0], "r2": [1, None, None]}}},
        ),
        (
            RANKS_MARKER + '{"app": {"M": {"bad": [null, 0, 0], "short": [1], "r": [2, 0, 1]}, "N": 3}}',
            {"app": {"M": {"r": [2, 0, 1]}}},
        ),
        (f'{RANKS_MARKER}{{"old": {{}}}}\n{RANKS_MARKER}{{"new": {{}}}}\n', {"new": {}}),
    ],
    ids=[
        "empty",
        "no marker",
        "not json",
        "not an object",
        "ranks",
        "malformed entries dropped",
        "last line wins",
    ],
)
def test_parse_ranks_output(logs: str, expected: object) -> None:
    assert parse_ranks_output(logs) == expected


@pytest.fixture(scope="module")
async def target(
    cluster: ActivityKube, deps: ActivityDependencies, core_api: client.CoreV1Api
) -> DashboardTarget:
    namespace, _ = await ready_raycluster(deps, core_api)
    return DashboardTarget(namespace=namespace, head_service="rc-head-svc")


async def test_without_serve_the_read_reports_the_failed_job(
    deps: ActivityDependencies, target: DashboardTarget
) -> None:
    ranks = await RecordingEnvironment().env.run(
        ReplicaRankActivities(deps).read_replica_ranks, ReadReplicaRanks(target, "ranks-none", 0.05)
    )
    assert ranks.ranks == {}
    assert "ended FAILED" in ranks.error
    assert "SERVE_CONTROLLER_ACTOR" in ranks.error


async def test_ranks_of_running_replicas_are_read_and_the_job_record_deleted(
    deps: ActivityDependencies, target: DashboardTarget
) -> None:
    config = versioned_serve_config(3)
    dashboard = DashboardActivities(deps)
    await ActivityEnvironment().run(dashboard.put_serve_config, PutServeConfig(target, config))
    view = None
    async with asyncio.timeout(20):
        while True:
            observation = await RecordingEnvironment().env.run(
                DashboardWaits(deps).wait_serve,
                WaitServe(target, "rc", check_head=False, last_view=view, poll_seconds=0.05),
            )
            view = observation.view
            deployment = view.get("applications", {}).get("app1", {}).get("deployments", {}).get("Versioned")
            if deployment and deployment["status"] == "HEALTHY" and deployment["running"] == 3:
                break
    assert observation.details is not None
    shown = observation.details["applications"]["app1"]["deployments"]["Versioned"]
    assert shown["num_replicas"] == 3
    assert all("rank" not in replica for replica in shown["replicas"])  # as Ray 2.60's dashboard

    recording = RecordingEnvironment().with_heartbeat_timeout(3.0)
    ranks = await recording.env.run(
        ReplicaRankActivities(deps).read_replica_ranks, ReadReplicaRanks(target, "ranks-1", 0.05)
    )
    assert ranks.error == ""
    by_replica = ranks.ranks["app1"]["Versioned"]
    assert set(by_replica) == {replica["replica_id"] for replica in shown["replicas"]}
    assert sorted(entry[0] for entry in by_replica.values()) == [0, 1, 2]
    missing = await ActivityEnvironment().run(dashboard.get_job_info, RayJobKey(target, "ranks-1"))
    assert missing.outcome == "not_found"
    # The same submission id can be read again once its record is gone.
    again = await RecordingEnvironment().env.run(
        ReplicaRankActivities(deps).read_replica_ranks, ReadReplicaRanks(target, "ranks-1", 0.05)
    )
    assert again == ranks


async def test_a_cancelled_read_removes_its_running_job(
    deps: ActivityDependencies, target: DashboardTarget
) -> None:
    dashboard = DashboardActivities(deps)
    request = {"entrypoint": "sleep 30", "submission_id": "ranks-cancelled"}
    await ActivityEnvironment().run(dashboard.submit_job, SubmitJob(target, request))
    client = await DashboardClient.open(deps, target)
    await remove_job(client, "ranks-cancelled", 0.05)
    missing = await ActivityEnvironment().run(dashboard.get_job_info, RayJobKey(target, "ranks-cancelled"))
    assert missing.outcome == "not_found"
