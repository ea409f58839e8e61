"""S2: the Temporal server (a dev server on a database file) and the worker stop in the middle of a blue-green
upgrade and start again; the upgrade finishes as it would have, with the old cluster deleted after its
deletion delay and nothing duplicated; and the server alone restarts in the middle of a RayJob's TTL wait, the
deletion firing at endTime + TTL (tests/integration/test_rayjob_durability.py, issue 5, inside `make test`,
stops the worker too).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import config

from sandbox.testing import wait_until
from tests.integration.rayjob_support import parse_time
from tests.integration.rayservice_helpers import (
    DELETION_DELAY_S,
    active_cluster,
    is_running,
    pending_cluster,
    rayservice,
)
from tests.integration.stack import Stack, kubeconfig_worker
from tests.integration.test_rayjob_durability import (
    DevServer,
    assert_one_durable_timer,
    assert_woken_then_deleted,
    complete,
    delete_cluster_after,
    own_dev_server,
    watch_deletion,
)
from tests.kubes import RealKube
from tests.reliability.figures import FULL, figure
from tests.reliability.ledger import Ledger
from tests.reliability.objects import leftovers, names_seen
from workflows.decisions.rayservice.drain import DEFAULT_MAX_DRAIN

# About 40 s each with its own dev server: only in `make reliability` (`make test` budget).
pytestmark = [
    pytest.mark.devserver,
    pytest.mark.timeout(600),
    pytest.mark.skipif(not FULL, reason="full runs only (make reliability)"),
]


def upgrading(status: dict[str, Any]) -> bool:
    return bool(pending_cluster(status)) and bool(active_cluster(status))


async def test_a_blue_green_upgrade_survives_a_server_and_worker_restart(
    tmp_path: Path, real_kube_of_simulated_ray: RealKube, ledger: Ledger
) -> None:
    recorded = figure("S2", "Temporal server + worker restart during a blue-green upgrade")
    kube = real_kube_of_simulated_ray
    with contextlib.closing(config.new_client_from_config(config_file=str(kube.admin))) as api_client:
        async with own_dev_server(tmp_path) as server:
            stack = Stack(await server.start(), "", api_client)
            await restart_during_upgrade(server, stack, kube.installed.worker, ledger)
    recorded.tried, recorded.survived = 1, 1


async def restart_during_upgrade(server: DevServer, stack: Stack, kubeconfig: Path, ledger: Ledger) -> None:
    namespace = stack.namespace()
    async with names_seen(stack, namespace) as clusters:
        async with kubeconfig_worker(stack.client, kubeconfig) as task_queue:
            stack = dataclasses.replace(stack, task_queue=task_queue)
            handle = await stack.start(rayservice(namespace, "restarted", "v1"))
            first = active_cluster(await stack.wait_status(handle, is_running, within=120, what="v1 running"))
            await handle.execute_update("apply", rayservice(namespace, "restarted", "v2"))
            await stack.wait_status(handle, upgrading, within=120, what="the v2 cluster pending")
        await asyncio.to_thread(server.stop)
        client = await server.start()
        stack = dataclasses.replace(stack, client=client)
        async with kubeconfig_worker(client, kubeconfig, stack.task_queue):
            handle = client.get_workflow_handle(handle.id)

            def upgraded(status: dict[str, Any]) -> bool:
                return is_running(status) and active_cluster(status) != first and not pending_cluster(status)

            second = active_cluster(await stack.wait_status(handle, upgraded, within=180, what="v2 active"))
            promoted_at = time.monotonic()

            async def old_cluster_gone() -> bool:
                return not stack.exists("rayclusters", namespace, first)

            # After its delay the old cluster is drained (on by default), DEFAULT_MAX_DRAIN at most.
            within = DELETION_DELAY_S + DEFAULT_MAX_DRAIN.total_seconds() + 30
            await wait_until(old_cluster_gone, within=within, interval=0.2, what="v1 deleted")
            assert time.monotonic() - promoted_at >= DELETION_DELAY_S - 1.5, "deleted before its delay"
            await handle.execute_update("delete")
            await handle.result()
            await ledger.record(handle)
    assert clusters == {first, second}, f"RayClusters created: {sorted(clusters)}"
    assert not leftovers(stack, namespace)


TTL_SECONDS = 15  # due well after the restart: the timer must fire on time on the restarted server


async def test_a_rayjob_ttl_wait_survives_a_server_restart(
    tmp_path: Path, real_kube_of_simulated_ray: RealKube, ledger: Ledger
) -> None:
    """The Temporal server stops mid TTL wait (after the job finished, before endTime + TTL) and starts again
    on its database file; the worker stays up throughout and reconnects. The cluster goes at endTime + TTL."""
    recorded = figure("S2", "Temporal server restart during a RayJob's TTL wait (worker stays up)")
    kube = real_kube_of_simulated_ray
    with contextlib.closing(config.new_client_from_config(config_file=str(kube.admin))) as api_client:
        async with own_dev_server(tmp_path) as server:
            stack = Stack(await server.start(), "", api_client)
            lag = await restart_during_ttl_wait(server, stack, kube.installed.worker, ledger)
    recorded.tried, recorded.survived = 1, 1
    recorded.notes.append(f"deleted {lag:+.2f} s from endTime + TTL ({TTL_SECONDS} s)")


async def restart_during_ttl_wait(server: DevServer, stack: Stack, kubeconfig: Path, ledger: Ledger) -> float:
    namespace = stack.namespace()
    deleted = watch_deletion(stack, namespace)
    async with kubeconfig_worker(stack.client, kubeconfig) as task_queue:
        stack = dataclasses.replace(stack, task_queue=task_queue)
        handle = await stack.start(delete_cluster_after(namespace, TTL_SECONDS))
        due = parse_time((await stack.wait_status(handle, complete, within=60))["endTime"]) + TTL_SECONDS
        await asyncio.to_thread(server.stop)
        assert time.time() < due - 5, "stopped too late to wait past the restart"
        assert not deleted.done(), "deleted before the restart"
        client = await server.start()
        lag = await deleted - due
        # The lag is a figure of the machine's load; the timer's firing and what it woke are in the history.
        assert lag >= -0.05, f"deleted {lag:+.2f} s from endTime + TTL: early"
        again = client.get_workflow_handle(handle.id, run_id=handle.result_run_id)
        result = await again.result()
        assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
        await assert_one_durable_timer(again, due)
        await assert_woken_then_deleted(again, datetime.fromtimestamp(due, UTC))
        await ledger.record(again)
    # The submitter Job and the head Service stay after a DeleteCluster rule, as in KubeRay.
    assert not [entry for entry in leftovers(stack, namespace) if entry.startswith("RayCluster/")]
    return lag
