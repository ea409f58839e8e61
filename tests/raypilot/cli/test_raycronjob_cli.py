"""KubeRay's two RayCronJob samples (examples/raycronjob/, in the same shape as KubeRay's) applied with
`raypilot apply` on the real stack, unchanged but for a namespace of the run's own (the test processes
share one Temporal server, where a tick's RayJob id, `rayjob/NS/NAME-<minute>`, is the same for the same
minute): each runs a RayJob on its tick (a trigger now; the Taipei one on a backfilled 21:45), `status`
shows them, and `delete` leaves nothing behind (schedule, RayJobs, their clusters and submitter Jobs)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from tests.raypilot.cli.conftest import CliStack

pytestmark = [pytest.mark.devserver, pytest.mark.slow, pytest.mark.timeout(420)]

SAMPLES = Path(__file__).parents[3] / "examples" / "raycronjob"
SAMPLE, TIMEZONE_SAMPLE = "raycronjob-sample", "raycronjob-timezone-sample"


async def finished_rayjobs(cli_stack: CliStack, namespace: str, name: str) -> dict[str, dict[str, object]]:
    """The RayCronJob's RayJobs whose job finished (Complete), by name, with their status."""
    query = f"WorkflowType = 'RayJobWorkflow' AND RayNamespace = '{namespace}' AND RayCronJob = '{name}'"
    found = {}
    async for execution in cli_stack.client.list_workflows(query):
        handle = cli_stack.client.get_workflow_handle(execution.id)
        status = await (
            handle.query("status") if execution.status == WorkflowExecutionStatus.RUNNING else handle.result()
        )
        if status.get("jobDeploymentStatus") == "Complete":
            found[execution.id.rsplit("/", 1)[-1]] = status
    return found


# A triggered RayJob runs in ~30 s on an idle machine: its head, worker and submitter are processes of
# their own, and beside a test file starting many clusters (load average 35 on 2 cores) 120 s was once not
# enough.
async def until(probe, what: str, seconds: float = 180.0):  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        value = await probe()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not in time: {what}")
        await asyncio.sleep(0.5)


def leftovers(cli_stack: CliStack, namespace: str, names: set[str]) -> list[str]:
    custom = k8s.CustomObjectsApi(cli_stack.api_client)
    clusters = custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")["items"]
    jobs = k8s.BatchV1Api(cli_stack.api_client).list_namespaced_job(namespace).items
    owners = [
        cluster["metadata"].get("labels", {}).get("ray.io/originated-from-cr-name") for cluster in clusters
    ]
    owners += [(job.metadata.labels or {}).get("ray.io/originated-from-cr-name") for job in jobs]
    return [owner for owner in owners if owner in names]


def samples_in(namespace: str, directory: Path) -> Path:
    for sample in SAMPLES.glob("*.yaml"):
        documents = list(yaml.safe_load_all(sample.read_text()))
        for document in documents:
            document["metadata"]["namespace"] = namespace
        (directory / sample.name).write_text(yaml.safe_dump_all(documents))
    return directory


async def test_kuberays_samples_run_on_their_ticks_and_delete_leaves_nothing(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    ns = cli_stack.namespace()
    result = await cli_stack.run("apply", "-f", str(samples_in(ns, tmp_path)))
    assert result.code == 0, result.stderr
    assert f"raycronjob/{ns}/{SAMPLE} created" in result.stdout
    assert f"raycronjob/{ns}/{TIMEZONE_SAMPLE} created" in result.stdout
    assert f"configmap/{ns}/ray-job-code-sample" in result.stdout
    before = datetime.now(UTC)
    assert (await cli_stack.run("cronjob", "trigger", f"raycronjob/{ns}/{SAMPLE}")).code == 0
    backfill = await cli_stack.run(
        "cronjob",
        "backfill",
        f"raycronjob/{ns}/{TIMEZONE_SAMPLE}",
        "--from",
        "2026-11-23T00:00:00Z",
        "--to",
        "2026-11-24T00:00:00Z",
    )
    assert backfill.code == 0, backfill.stderr

    sample_runs = await until(
        lambda: finished_rayjobs(cli_stack, ns, SAMPLE), "the triggered RayJob finished"
    )
    timezone_runs = await until(
        lambda: finished_rayjobs(cli_stack, ns, TIMEZONE_SAMPLE), "the 21:45 RayJob finished"
    )
    # 21:45 in Taipei on 23 November 2026 is 13:45 UTC.
    taipei = int(datetime(2026, 11, 23, 13, 45, tzinfo=UTC).timestamp()) // 60
    assert list(timezone_runs) == [f"{TIMEZONE_SAMPLE}-{taipei}"]
    # The sample runs every minute: a slow run also sees the ticks since the apply, besides the trigger's.
    assert sample_runs
    assert all(int(name.rsplit("-", 1)[1]) >= int(before.timestamp()) // 60 for name in sample_runs)

    status = await cli_stack.run("status", f"raycronjob/{ns}/{TIMEZONE_SAMPLE}", "-o", "json")
    assert status.code == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["lastScheduleTime"] == "2026-11-23T13:45:00Z"
    assert [run["name"] for run in shown["runs"]] == [f"{TIMEZONE_SAMPLE}-{taipei}"]

    rayjob_names = {*sample_runs, *timezone_runs}
    assert leftovers(
        cli_stack, ns, rayjob_names
    )  # the clusters stay 600 s after their jobs (the samples' TTL)
    for cronjob in (SAMPLE, TIMEZONE_SAMPLE):
        deleted = await cli_stack.run("delete", f"raycronjob/{ns}/{cronjob}")
        assert deleted.code == 0, deleted.stderr
        assert f"raycronjob/{ns}/{cronjob} deleted" in deleted.stdout
        with pytest.raises(RPCError) as missing:
            await cli_stack.client.get_schedule_handle(f"raycronjob/{ns}/{cronjob}").describe()
        assert missing.value.status == RPCStatusCode.NOT_FOUND
    assert leftovers(cli_stack, ns, rayjob_names) == []
    for name in rayjob_names:
        state = (await cli_stack.client.get_workflow_handle(f"rayjob/{ns}/{name}").describe()).status
        assert state != WorkflowExecutionStatus.RUNNING
