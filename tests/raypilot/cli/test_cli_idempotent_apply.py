"""`raypilot apply` is idempotent, as `kubectl apply` is (issue 22), end to end on the real stack: a
finished RayJob is applied again (same and changed spec) without a new run or cluster, `temporal workflow
start` with its id takes it over without side effects, `raypilot delete` then lets it run once more, and a
leftover submitter Job of an earlier run is never adopted."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from raypilot.testing.binaries import temporal_cli
from tests.raypilot.cli.conftest import CliStack
from tests.readiness import with_quick_readiness

pytestmark = [pytest.mark.devserver, pytest.mark.slow, pytest.mark.timeout(240)]

EXAMPLE = json.loads((Path(__file__).parents[3] / "examples" / "rayjob.json").read_text())


def k8s_rayjob(namespace: str, name: str, entrypoint: str = "sleep 1") -> dict[str, Any]:
    """A K8sJobMode RayJob whose cluster goes when the job ends (TTL 0): its finished submitter Job stays; the
    tests' quick readiness probes (tests/readiness.py)."""
    manifest = copy.deepcopy(EXAMPLE)
    with_quick_readiness(manifest["spec"]["rayClusterSpec"])
    manifest["metadata"] = {"name": name, "namespace": namespace}
    manifest["spec"].update(entrypoint=entrypoint, submissionMode="K8sJobMode", shutdownAfterJobFinishes=True)
    manifest["spec"].pop("ttlSecondsAfterFinished", None)
    return manifest


async def run_ids(cli_stack: CliStack, workflow_id: str) -> list[str]:
    return [
        execution.run_id
        async for execution in cli_stack.client.list_workflows(f"WorkflowId = '{workflow_id}'")
    ]


def submitter(cli_stack: CliStack, namespace: str, name: str) -> k8s.V1Job:
    return k8s.BatchV1Api(cli_stack.api_client).read_namespaced_job(name, namespace)


async def test_a_finished_rayjob_applied_again_is_unchanged_until_deleted(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace = cli_stack.namespace()
    ref = f"rayjob/{namespace}/mnist"
    manifest = k8s_rayjob(namespace, "mnist")
    started = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert started.code == 0, started.stderr
    handle = cli_stack.client.get_workflow_handle(ref)
    first = await handle.result()
    assert (first["jobDeploymentStatus"], first["jobStatus"]) == ("Complete", "SUCCEEDED")
    job_uid = submitter(cli_stack, namespace, "mnist").metadata.uid
    first_run = (await handle.describe()).run_id
    assert not cli_stack.owned("rayclusters", namespace, "RayJob", "mnist")  # TTL 0

    same = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert same.code == 0, same.stderr
    assert same.stdout.startswith(f"{ref} unchanged: Complete (job status SUCCEEDED)")
    assert "spec differs" not in same.stdout
    changed_spec = k8s_rayjob(namespace, "mnist", "sleep 2")
    changed = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(changed_spec))
    assert changed.code == 0, changed.stderr
    assert "unchanged: Complete" in changed.stdout
    assert "KubeRay ignores spec changes of a finished RayJob" in changed.stdout
    assert len(await run_ids(cli_stack, ref)) == 1
    assert not cli_stack.owned("rayclusters", namespace, "RayJob", "mnist")
    assert submitter(cli_stack, namespace, "mnist").metadata.uid == job_uid

    # The temporal CLI with the used id (default reuse policy): the new run takes the finished object over.
    manifest_file = tmp_path / "mnist.json"
    manifest_file.write_text(json.dumps(manifest))
    # Run without blocking the event loop: the worker answering it runs on this loop.
    temporal = await asyncio.create_subprocess_exec(
        temporal_cli(), "workflow", "execute", "--address", cli_stack.env["TEMPORAL_ADDRESS"],
        "--task-queue", cli_stack.env["RAYPILOT_TASK_QUEUE"], "--type", "RayJobWorkflow",
        "--workflow-id", ref, "--input-file", str(manifest_file),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(temporal.communicate(), 60)
    assert temporal.returncode == 0, stderr.decode()
    again = cli_stack.client.get_workflow_handle(ref)
    assert await again.result() == first
    assert (await (await again.describe()).memo())["raypilot.io/inherited-from"] == first_run
    assert len(await run_ids(cli_stack, ref)) == 2
    assert not cli_stack.owned("rayclusters", namespace, "RayJob", "mnist")
    assert submitter(cli_stack, namespace, "mnist").metadata.uid == job_uid
    still = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert (still.code, "unchanged: Complete" in still.stdout) == (0, True)

    # Deleted, as `kubectl delete` deletes it: the next apply runs it anew, on a fresh cluster and Job.
    deleted = await cli_stack.run("delete", ref)
    assert deleted.code == 0, deleted.stderr
    assert "removed from Temporal" in deleted.stdout
    assert not cli_stack.owned("jobs", namespace, "RayJob", "mnist")
    rerun = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))
    assert rerun.code == 0, rerun.stderr
    assert rerun.stdout.startswith(f"{ref} started")
    second = await cli_stack.client.get_workflow_handle(ref).result()
    assert (second["jobDeploymentStatus"], second["jobStatus"]) == ("Complete", "SUCCEEDED")
    fresh = submitter(cli_stack, namespace, "mnist")
    assert fresh.metadata.uid != job_uid
    assert fresh.metadata.annotations["raypilot.io/rayjob-uid"] == (await handle.describe()).run_id
    assert len(await run_ids(cli_stack, ref)) == 1  # the deleted runs are gone from Temporal


async def test_a_leftover_submitter_job_of_an_earlier_run_is_not_adopted(cli_stack: CliStack) -> None:
    namespace = cli_stack.namespace()
    ref = f"rayjob/{namespace}/reused"
    # What an earlier run left: a finished submitter Job of the RayJob's name, created by another run.
    leftover = k8s.V1Job(
        metadata=k8s.V1ObjectMeta(
            name="reused",
            labels={"ray.io/originated-from-cr-name": "reused", "ray.io/originated-from-crd": "RayJob",
                    "app.kubernetes.io/created-by": "raypilot"},
            annotations={"raypilot.io/workflow-id": ref, "raypilot.io/rayjob-uid": "an-earlier-run"},
        ),
        spec=k8s.V1JobSpec(
            backoff_limit=0,
            template=k8s.V1PodTemplateSpec(
                spec=k8s.V1PodSpec(
                    restart_policy="Never",
                    containers=[k8s.V1Container(name="c", image="x", command=["true"])],
                )
            ),
        ),
    )  # fmt: skip
    old_uid = k8s.BatchV1Api(cli_stack.api_client).create_namespaced_job(namespace, leftover).metadata.uid

    applied = await cli_stack.run("apply", "-f", "-", stdin=yaml.safe_dump(k8s_rayjob(namespace, "reused")))
    assert applied.code == 0, applied.stderr
    handle = cli_stack.client.get_workflow_handle(ref)
    result = await handle.result()
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    job = submitter(cli_stack, namespace, "reused")
    assert job.metadata.uid != old_uid
    assert job.metadata.annotations["raypilot.io/rayjob-uid"] == (await handle.describe()).run_id
