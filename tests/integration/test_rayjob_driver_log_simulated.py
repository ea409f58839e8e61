"""Logs after teardown end to end: the real worker and activities on the real stack with simulated Ray. A
failing Ray job's driver log is read through the API server's proxy and saved (the DriverLogSaved Event on
the RayJob in Kubernetes, the condition in its status) before shutdownAfterJobFinishes deletes its cluster;
`raypilot logs` prints the live log from the dashboard while the job runs, and the saved tail after."""

from __future__ import annotations

import io
from typing import Any

import pytest

from activities.dependencies import ActivityDependencies
from models.naming import ObjectRef
from raypilot.cli.common import Console
from raypilot.cli.logs_command import print_logs
from tests.integration.rayjob_support import example, rayjob_events
from tests.integration.stack import Stack

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(180)]

ENTRYPOINT = "echo loading the data; echo step 1 of 2; echo 'ValueError: the data is bad'; exit 3"


async def _logs_printed(stack: Stack, namespace: str, status: dict[str, Any]) -> tuple[str, str]:
    """What `raypilot logs` (without --follow) prints to stdout and to stderr for the RayJob of `status`,
    run outside the cluster: through the API server's proxy as the stack's admin."""
    stdout, stderr = io.StringIO(), io.StringIO()
    dependencies = ActivityDependencies(
        env={"RAYPILOT_DASHBOARD_ACCESS": "proxy"}, kube_configuration=stack.api_client.configuration
    )
    ref = ObjectRef("RayJob", namespace, "rayjob-httpmode")
    try:
        shown = Console(stdout=stdout, stderr=stderr, env={})
        assert await print_logs(ref, status, dependencies, None, shown, follow=False) == 0
    finally:
        await dependencies.aclose()
    return stdout.getvalue(), stderr.getvalue()


async def test_a_failed_jobs_log_is_saved_before_its_cluster_goes_and_printed_after(
    kube_stack: Stack,
) -> None:
    namespace = kube_stack.namespace()
    manifest = example(
        "rayjob-httpmode", namespace, entrypoint=ENTRYPOINT, shutdownAfterJobFinishes=True,
        ttlSecondsAfterFinished=0,
    )  # fmt: skip
    handle = await kube_stack.start(manifest)
    result: dict[str, Any] = await handle.result()

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Failed", "FAILED"), result
    assert not kube_stack.exists("rayclusters", namespace, result["rayClusterName"])
    [condition] = [c for c in result["conditions"] if c["type"] == "DriverLogSaved"]
    assert (condition["status"], condition["reason"]) == ("True", "TailSaved"), condition
    assert condition["message"].endswith("step 1 of 2\nValueError: the data is bad"), condition
    events = rayjob_events(kube_stack, namespace, "rayjob-httpmode")
    [saved] = [event for event in events if event["reason"] == "DriverLogSaved"]
    assert saved["message"].endswith("ValueError: the data is bad"), saved
    assert saved["message"].startswith(f"Driver log of Ray job {result['jobId']}, full log ("), saved

    stdout, stderr = await _logs_printed(kube_stack, namespace, result)
    assert stdout.endswith("step 1 of 2\nValueError: the data is bad\n")
    assert "its RayCluster is gone" in stderr


async def test_the_live_log_comes_from_the_dashboard_through_the_api_servers_proxy(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    manifest = example("rayjob-httpmode", namespace, entrypoint="echo hello from the driver; sleep 600")
    handle = await kube_stack.start(manifest)
    status = await kube_stack.wait_status(handle, lambda s: s.get("jobStatus") == "RUNNING", within=120)
    try:
        stdout, stderr = await _logs_printed(kube_stack, namespace, status)
    finally:
        await handle.execute_update("delete")
    assert "hello from the driver\n" in stdout
    assert stderr == ""
