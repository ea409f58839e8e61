"""S3: full RayJob and RayService lifecycles through a faulty Kubernetes API (a fault proxy in front of
kube-apiserver, sandbox/realkube/faultproxy.py):
10 % 5xx on every request, 409 on creates and updates, 429 with Retry-After, latency on every verb.

Pass means every lifecycle ends as it would without faults, no object is duplicated or left behind, and a
429's Retry-After is waited out. The figures count the faults injected per rule.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import WorkflowHandle

from sandbox.faults import FaultRule
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.rayservice_helpers import active_cluster, is_running, pending_cluster, rayservice
from tests.integration.stack import Stack
from tests.reliability.conftest import WorkerApi
from tests.reliability.figures import FULL, SEED, Figure, figure, sized
from tests.reliability.ledger import Ledger
from tests.reliability.objects import created_count, difference, kinds_left, names_seen, store_list
from tests.reliability.upgrade import upgrade_under_load
from workflows.decisions.rayservice.drain import DEFAULT_MAX_DRAIN

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(900 if FULL else 150)]

LATENCY_SECONDS = 0.5 if FULL else 0.05
# The waits of a RayService's life, scaled with the latency of the full runs.
PATIENCE = 6.0 if FULL else 1.0
RETRY_AFTER_SECONDS = 2


def faulty_api(first_create_throttled: bool) -> list[FaultRule]:
    """The issue's fault mix; optionally the first RayCluster create is answered 429 (to time Retry-After)."""
    throttle_first = FaultRule(
        verbs=frozenset({"create"}), resources=frozenset({"rayclusters"}), error_rate=1.0, status=429,
        retry_after_seconds=RETRY_AFTER_SECONDS, times=1,
    )  # fmt: skip
    return [
        *([throttle_first] if first_create_throttled else []),
        FaultRule(error_rate=0.10, status=500),
        FaultRule(verbs=frozenset({"create", "update", "patch"}), error_rate=0.10, status=409),
        FaultRule(error_rate=0.05, status=429, retry_after_seconds=1),
        FaultRule(latency_seconds=LATENCY_SECONDS),
    ]


def count_injected(api: WorkerApi, recorded: Figure) -> None:
    for rule in api.fault_rules():
        if rule["errorRate"]:
            recorded.faults[f"HTTP {rule['status']}"] += rule["injected"]


def finish(
    stack: Stack, api: WorkerApi, recorded: Figure, namespace: str, survived: bool, undisturbed: Counter[str]
) -> None:
    """Clear the faults, compare what is left in `namespace` with an undisturbed run's and record the run."""
    count_injected(api, recorded)
    api.clear_faults()
    differs = difference(kinds_left(stack, namespace), undisturbed)
    recorded.tried += 1
    recorded.leaked += len(differs)
    recorded.survived += int(survived and not differs)
    assert not differs, f"objects differ from an undisturbed run: {differs}"


async def first_raycluster(stack: Stack, namespace: str) -> float:
    """The moment (time.monotonic()) a RayCluster first exists in `namespace`."""

    async def created() -> float | None:
        return time.monotonic() if store_list(stack, "ray.io/v1", "RayCluster", namespace) else None

    return await wait_until(created, within=120, interval=0.05, what="a RayCluster")


def rayjob(namespace: str, name: str) -> dict[str, Any]:
    return example(
        "rayjob-k8sjobmode", namespace, rename=name, entrypoint="sleep 1",
        shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=0,
    )  # fmt: skip


async def test_rayjob_lifecycles_survive_a_faulty_api(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger
) -> None:
    stack = reliability_stack
    recorded = figure("S3", "RayJob (K8sJobMode, shutdownAfterJobFinishes) on a faulty API")
    calm = stack.namespace()
    assert (await (await stack.start(rayjob(calm, "calm"))).result())["jobStatus"] == "SUCCEEDED"
    # The submitter Job, its pod and the head Service stay after an undisturbed run too, as in KubeRay.
    undisturbed = kinds_left(stack, calm)
    waits: list[float] = []
    for run in range(sized(1, 5)):
        namespace = stack.namespace()
        worker_api.set_faults(faulty_api(first_create_throttled=True), SEED + run)
        started = time.monotonic()
        handle = await stack.start(rayjob(namespace, f"faulty-{run}"))

        created_after = await first_raycluster(stack, namespace) - started
        result = await handle.result()
        await ledger.record(handle)
        survived = (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED")
        finish(stack, worker_api, recorded, namespace, survived, undisturbed)
        assert survived, result
        assert created_after >= RETRY_AFTER_SECONDS, f"RayCluster created {created_after:.2f} s after a 429"
        assert created_count(stack, namespace, "CreatedRayCluster") == 1
        assert created_count(stack, namespace, "CreatedRayJobSubmitter") == 1
        waits.append(created_after)
    recorded.notes.append(f"Retry-After {RETRY_AFTER_SECONDS} s: first create {min(waits):.1f} s after a 429")


async def test_rayservice_lifecycles_survive_a_faulty_api(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger
) -> None:
    stack = reliability_stack
    recorded = figure("S3", "RayService (NewCluster upgrade, delete) on a faulty API")
    for run in range(sized(1, 3)):
        namespace = stack.namespace()
        worker_api.set_faults(faulty_api(first_create_throttled=False), SEED + 100 + run)
        async with names_seen(stack, namespace) as clusters:
            first, second = await upgrade_then_delete(stack, ledger, namespace, f"faulty-{run}")
        finish(stack, worker_api, recorded, namespace, survived=True, undisturbed=Counter())
        assert clusters == {first, second}, f"RayClusters created: {sorted(clusters)}"


async def upgrade_then_delete(stack: Stack, ledger: Ledger, namespace: str, name: str) -> tuple[str, str]:
    """A RayService's whole life: v1 running, a NewCluster upgrade to v2, the old cluster gone, `delete`.
    Returns the names of its two RayClusters."""
    # The three waits together stay within the file's 150 s timeout, so that a stall fails here, with the
    # run's history, not at pytest's timeout (an undisturbed life takes about 25 s).
    handle = await stack.start(rayservice(namespace, name, "v1"))
    running = await stack.wait_status(handle, is_running, within=60 * PATIENCE, what="v1 running")
    first = active_cluster(running)
    assert await handle.execute_update("apply", rayservice(namespace, name, "v2")) == {"generation": 2}

    def upgraded(status: dict[str, Any]) -> bool:
        return is_running(status) and active_cluster(status) != first and not pending_cluster(status)

    second = active_cluster(await stack.wait_status(handle, upgraded, within=60 * PATIENCE, what="v2 active"))

    async def old_cluster_gone() -> bool:
        names = [c["metadata"]["name"] for c in store_list(stack, "ray.io/v1", "RayCluster", namespace)]
        return names == [second]

    # After its delay the old cluster is drained (on by default): its metrics are read through the faulty API
    # server, so readings may fail and hold it for DEFAULT_MAX_DRAIN.
    within = 25 * PATIENCE + DEFAULT_MAX_DRAIN.total_seconds()
    await wait_until(old_cluster_gone, within=within, interval=0.2, what="only the v2 cluster left")
    await handle.execute_update("delete")
    await handle.result()
    await ledger.record(handle)
    return first, second


async def test_incremental_upgrades_survive_a_faulty_api(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger
) -> None:
    """An incremental upgrade under load through the Gateway while the API misbehaves: the faults go on from
    the first apply to the delete (full runs only: about 30 s each)."""
    if not FULL:
        pytest.skip("full runs only (make reliability): make test has S1(a)'s incremental upgrade")
    stack = reliability_stack
    recorded = figure("S3", "RayService (incremental upgrade under load, delete) on a faulty API")
    recorded.failed_requests = 0
    for run in range(3):
        namespace = stack.namespace()
        worker_api.set_faults(faulty_api(first_create_throttled=False), SEED + 200 + run)

        async def faults_stay_on(
            handle: WorkflowHandle[Any, Any], upgrading: Callable[[], Awaitable[bool]]
        ) -> None:
            return None  # the fault rules are the disturbance

        handle, outcome = await upgrade_under_load(stack, namespace, stack.start, faults_stay_on)
        await handle.execute_update("delete")
        await handle.result()
        await ledger.record(handle)
        recorded.failed_requests += len(outcome.failures)
        finish(
            stack,
            worker_api,
            recorded,
            namespace,
            outcome.same_end_state() and not outcome.failures,
            Counter(),
        )
        assert outcome.same_end_state(), (outcome.leftover_difference(), outcome)
        assert not outcome.failures, outcome.failures[:20]
