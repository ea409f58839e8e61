"""RayJobWorkflow behind the CRD front door, on fake activities: the jobStatus memo the controller's status
write-back follows (patch rayjob-job-status-memo), and a RayJob adopted from KubeRay continuing its Ray job
(patch rayjob-adoption)."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from temporalio.testing import WorkflowEnvironment

from models.source import AdoptedRayJob
from raypilot.testing.rayjob_scenarios import CLUSTER_SPEC, history_event_types, rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeWorld
from wire import names
from workflows.search_attributes import MEMO_JOB_STATUS

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]
PROPERTIES_MODIFIED = "EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED"
MARKER = "EVENT_TYPE_MARKER_RECORDED"
UPSERT = "EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES"


def for_object(manifest: dict[str, Any], **annotations: str) -> dict[str, Any]:
    """The manifest as the controller hands over a raypilot.io object."""
    manifest["metadata"]["uid"] = "uid-object"
    manifest["metadata"]["annotations"] = {"raypilot.io/object-api-version": "raypilot.io/v1", **annotations}
    return manifest


async def _run(
    env: WorkflowEnvironment, fake_worker: FakeWorker, world: FakeWorld, manifest: dict[str, Any]
) -> tuple[dict[str, Any], Counter[str], dict[str, Any]]:
    async with fake_worker(env.client, activities=world.activities()) as queue:
        handle = await start(env.client, manifest, queue)
        result: dict[str, Any] = await handle.result()
        types = Counter(await history_event_types(handle))
        memo = await (await handle.describe()).memo()
    return result, types, memo


async def test_a_raypilot_io_rayjob_publishes_each_job_status_change_in_its_memo_and_nothing_more(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    """PENDING -> RUNNING -> SUCCEEDED within Running: three memo upserts (beside the outcome memo every
    completed run records): three events more than a run started without an object (the CLI), which has
    none of them, and no marker or search attribute upsert more. Workflow task events are not compared: how
    many tasks a run takes depends on how its activities' results meet in time, not on the memo."""
    plain, plain_types, plain_memo = await _run(
        time_skipping_env, fake_worker, FakeWorld(), rayjob_manifest("plain")
    )
    result, types, memo = await _run(
        time_skipping_env, fake_worker, FakeWorld(), for_object(rayjob_manifest("object"))
    )
    assert (result["jobStatus"], plain["jobStatus"]) == ("SUCCEEDED", "SUCCEEDED")
    assert memo[MEMO_JOB_STATUS] == "SUCCEEDED"
    assert MEMO_JOB_STATUS not in plain_memo
    assert types[PROPERTIES_MODIFIED] - plain_types[PROPERTIES_MODIFIED] == 3
    assert types[MARKER] == plain_types[MARKER]
    assert types[UPSERT] == plain_types[UPSERT]
    assert _commanded(types) - _commanded(plain_types) == 3


def _commanded(types: Counter[str]) -> int:
    """The events of a history but its workflow tasks' own (scheduled, started, completed, timed out)."""
    return sum(count for kind, count in types.items() if not kind.startswith("EVENT_TYPE_WORKFLOW_TASK_"))


def kuberay_world() -> FakeWorld:
    """What KubeRay left of the K8sJobMode RayJob `sample`: its ready RayCluster `sample-kuber`, its running
    submitter Job and its Ray job `sample-x7k2p`, RUNNING then SUCCEEDED."""
    world = FakeWorld()
    world.clusters["sample-kuber"] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "sample-kuber", "namespace": "default", "uid": "uid-kuberay"},
        "spec": copy.deepcopy(CLUSTER_SPEC),
    }
    world.make_ready("sample-kuber")
    world.jobs["sample"] = {
        "_submission_id": "sample-x7k2p",
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sample", "namespace": "default", "uid": "uid-submitter"},
        "spec": {},
        "status": {"active": 1},
    }
    world.add_ray_job("sample-x7k2p", ("RUNNING", "SUCCEEDED"))
    return world


def adopted_manifest() -> dict[str, Any]:
    """The raypilot.io RayJob `sample` as the controller hands it over after adopting `kuberay_world`."""
    adopted = AdoptedRayJob("sample-kuber", "sample-x7k2p", True, True, "2026-01-01T00:00:00Z")
    return for_object(
        rayjob_manifest(mode="K8sJobMode", shutdownAfterJobFinishes=True),
        **{"raypilot.io/adopted-rayjob": adopted.annotation()},
    )


async def test_an_adopted_rayjob_continues_kuberays_ray_job_and_creates_nothing_again(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    world = kuberay_world()
    result, _, _ = await _run(time_skipping_env, fake_worker, world, adopted_manifest())
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert (result["rayClusterName"], result["jobId"]) == ("sample-kuber", "sample-x7k2p")
    assert result["startTime"] == "2026-01-01T00:00:00Z"  # KubeRay's start: its deadlines count from it
    for created in (names.CREATE_RAYCLUSTER, names.CREATE_JOB, names.CREATE_SERVICE, names.SUBMIT_JOB):
        assert world.called(created) == [], created
    assert world.submissions == 0
    # shutdownAfterJobFinishes: KubeRay's cluster is deleted as the RayJob's own would be.
    assert "sample-kuber" not in world.clusters
    assert "sample" in world.jobs


async def test_an_adopted_httpmode_rayjob_finds_kuberays_submission_on_the_dashboard_and_follows_it(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    """KubeRay generated the submission id (no spec.jobId): the first attempt lists the cluster's jobs and
    follows the one KubeRay's rules name (`sample-<5>` with the RayJob's entrypoint); nothing is submitted."""
    world = kuberay_world()
    del world.jobs["sample"]
    world.add_ray_job("sample-b2c4d", ("RUNNING", "SUCCEEDED"))
    world.job_entrypoints["sample-b2c4d"] = ("python -c 'print(42)'", None)
    world.job_entrypoints["sample-x7k2p"] = ("python other.py", None)  # not this RayJob's entrypoint
    adopted = AdoptedRayJob("sample-kuber", "", False, True, "2026-01-01T00:00:00Z", lookup=True)
    manifest = for_object(rayjob_manifest(), **{"raypilot.io/adopted-rayjob": adopted.annotation()})
    result, _, _ = await _run(time_skipping_env, fake_worker, world, manifest)
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
    assert (result["rayClusterName"], result["jobId"]) == ("sample-kuber", "sample-b2c4d")
    assert len(world.called(names.LIST_SUBMITTED_JOBS)) == 1
    assert world.called(names.SUBMIT_JOB) == []
    assert world.called(names.CREATE_RAYCLUSTER) == []
