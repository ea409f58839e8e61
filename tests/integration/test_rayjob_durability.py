"""Deletion timers are durable (issue 5): a RayJob's deletion rule fires at endTime + TTL although the worker
AND the Temporal server were stopped after the job completed and started again, and a rule that fell due
while both were down runs as soon as they are back.

The test runs a dev server of its own on a database file, so it can stop it (SIGTERM by PID) and start it
again on the same file. The real stack (kube-apiserver, KubeRay's operator, pods of simulated Ray) stays up
throughout, as a Kubernetes cluster would; the worker runs as raypilot's ServiceAccount; a deletion is timed
by a watch on the RayClusters of the job's namespace. One restart serves both cases: the jobs run side by
side.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError

from raypilot.cli.stack import wait_for_port
from raypilot.testing.binaries import temporal_cli
from sandbox.realkube.controlplane import free_port
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example, first_raycluster_deletion, parse_time, rayjob_events
from tests.integration.stack import Stack, kubeconfig_worker
from tests.kubes import RealKube
from tests.workflows.timer_dues import deletion_timer_firings, deletion_timer_windows
from wire.names import DELETE_RAYCLUSTER, GET_RAYCLUSTER
from workflows.search_attributes import ALL_SEARCH_ATTRIBUTES

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(120)]

# Due well after the server and the worker are back.
TTL_AFTER_RESTART = 20
# Due while both are down: long enough to stop them first on a loaded machine.
TTL_WHILE_DOWN = 6
# How long both stay down after the second rule fell due.
DOWN_PAST_DUE_SECONDS = 3.0
STOP_PATIENCE_SECONDS = 20.0


@dataclasses.dataclass
class DevServer:
    """`temporal server start-dev` on a database file, which survives a stop and a start again."""

    workdir: Path
    port: int = dataclasses.field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def launch(self) -> Path:
        """Starts the server process; returns its log (appended to: both runs' logs are kept)."""
        attributes = [
            arg for key in ALL_SEARCH_ATTRIBUTES for arg in ("--search-attribute", f"{key.name}=Keyword")
        ]
        log = self.workdir / "temporal.log"
        with log.open("ab") as output:
            self.process = subprocess.Popen(
                [
                    temporal_cli(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(self.port),
                    "--headless", "--db-filename", str(self.workdir / "temporal.db"), "--log-level", "warn",
                    *attributes,
                ],
                stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        return log

    async def start(self) -> Client:
        """Starts the server and connects once it answers."""
        log = self.launch()
        await asyncio.to_thread(wait_for_port, "127.0.0.1", self.port, 60, "the Temporal dev server", log)

        async def connected() -> Client | None:
            try:
                client = await Client.connect(self.address, data_converter=pydantic_data_converter)
                await client.count_workflows()
            except (RuntimeError, RPCError):
                return None
            return client

        return await wait_until(connected, within=30, interval=0.2, what="the dev server answering")

    def stop(self) -> None:
        """SIGTERM to the server's process group; SIGKILL only if it does not stop in time."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_PATIENCE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@asynccontextmanager
async def own_dev_server(workdir: Path) -> AsyncIterator[DevServer]:
    server = DevServer(workdir)
    try:
        yield server
    finally:
        server.stop()


def delete_cluster_after(namespace: str, ttl: int) -> dict[str, Any]:
    rules = [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": ttl}}]
    return example(
        "rayjob-httpmode", namespace, entrypoint="echo hi", deletionStrategy={"deletionRules": rules}
    )


def watch_deletion(stack: Stack, namespace: str) -> asyncio.Task[float]:
    return asyncio.create_task(asyncio.to_thread(first_raycluster_deletion, stack, namespace, within=90))


def complete(status: dict[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") == "Complete"


async def assert_one_durable_timer(handle: WorkflowHandle[Any, Any], due: float) -> None:
    """The deletion timer was armed once, before the restart, for endTime + TTL: the new worker did not
    arm another one."""
    windows = await deletion_timer_windows(handle)
    due_at = datetime.fromtimestamp(due, UTC)
    assert len(windows) == 1, windows
    earliest, latest = windows[0]
    assert earliest - timedelta(milliseconds=1) <= due_at <= latest + timedelta(milliseconds=1), windows


async def assert_woken_then_deleted(handle: WorkflowHandle[Any, Any], not_before: datetime) -> None:
    """The deletion timer fired once, not before `not_before` (its due time, or the return of the server
    for a timer that fell due while it was down), and the workflow it woke read the RayCluster and deleted
    it without waiting on anything else first."""
    firings = await deletion_timer_firings(handle)
    assert len(firings) == 1, firings
    fired_at, acts = firings[0]
    assert fired_at >= not_before - timedelta(milliseconds=1), (fired_at, not_before)
    assert acts[:2] == [GET_RAYCLUSTER, DELETE_RAYCLUSTER], acts


async def test_deletion_timers_survive_a_server_and_worker_restart(
    tmp_path: Path, real_kube_of_simulated_ray: RealKube
) -> None:
    api_client = config.new_client_from_config(config_file=str(real_kube_of_simulated_ray.admin))
    with contextlib.closing(api_client):
        async with own_dev_server(tmp_path) as server:
            stack = Stack(await server.start(), "", api_client)
            await run_restart_scenario(server, stack, real_kube_of_simulated_ray.installed.worker)


async def run_restart_scenario(server: DevServer, stack: Stack, worker_kubeconfig: Path) -> None:
    later, overdue = stack.namespace(), stack.namespace()
    later_deleted, overdue_deleted = watch_deletion(stack, later), watch_deletion(stack, overdue)

    async with kubeconfig_worker(stack.client, worker_kubeconfig) as task_queue:
        stack = dataclasses.replace(stack, task_queue=task_queue)
        later_handle = await stack.start(delete_cluster_after(later, TTL_AFTER_RESTART))
        overdue_handle = await stack.start(delete_cluster_after(overdue, TTL_WHILE_DOWN))
        later_end = parse_time((await stack.wait_status(later_handle, complete))["endTime"])
        overdue_end = parse_time((await stack.wait_status(overdue_handle, complete))["endTime"])
    await asyncio.to_thread(server.stop)
    down_at = time.time()
    overdue_due, later_due = overdue_end + TTL_WHILE_DOWN, later_end + TTL_AFTER_RESTART
    assert down_at < overdue_due, f"stopped {down_at - overdue_due:+.2f} s after the due time: too late"
    assert not later_deleted.done()
    assert not overdue_deleted.done()

    await asyncio.sleep(overdue_due + DOWN_PAST_DUE_SECONDS - time.time())  # the outage itself
    assert not overdue_deleted.done(), "deleted while the server and the worker were down"
    restarted_at = datetime.now(UTC)
    client = await server.start()
    async with kubeconfig_worker(client, worker_kubeconfig, stack.task_queue):
        back_at = time.time()
        # How soon each deletion came after its timer fired is the machine's load (server, worker and stack
        # all starting on 2 cores: 11 s once with a core held busy). What is decided is read from the
        # history: when each timer fired, and that the workflow it woke deleted the RayCluster next.
        overdue_deleted_at = await overdue_deleted
        assert overdue_deleted_at >= restarted_at.timestamp(), "deleted before the return"
        assert back_at < later_due, "the stack came back after the second due time; nothing left to test"
        later_lag = await later_deleted - later_due
        assert later_lag >= -0.05, f"deleted {later_lag:+.2f} s from its due time: early"

        for namespace, handle, due, woken_after in (
            (later, later_handle, later_due, datetime.fromtimestamp(later_due, UTC)),
            (overdue, overdue_handle, overdue_due, restarted_at),
        ):
            again = client.get_workflow_handle(handle.id, run_id=handle.result_run_id)
            result = await again.result()
            assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
            cluster_name = result["rayClusterName"]
            assert not stack.exists("rayclusters", namespace, cluster_name)
            assert {
                "reason": "DeletedRayCluster",
                "message": f"Deleted cluster {namespace}/{cluster_name}",
                "type": "Normal",
            } in rayjob_events(stack, namespace, "rayjob-httpmode")
            await assert_one_durable_timer(again, due)
            await assert_woken_then_deleted(again, woken_after)
    overdue_lag = overdue_deleted_at - restarted_at.timestamp()
    print(f"durability: overdue deletion {overdue_lag:.3f} s after the restart, on-time {later_lag:+.3f} s")
