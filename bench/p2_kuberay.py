"""P2K: the TTL deletion lag of raypilot beside KubeRay's operator itself, in one run on one real stack.

The stack: etcd, kube-apiserver, kube-controller-manager, kube-proxy, KubeRay's operator v1.5.0 in a pod,
raypilot's node agent running simulated Ray (bench/realkube_stack.py, shared with P3K). The same HTTPMode
RayJob (`shutdownAfterJobFinishes`, `ttlSecondsAfterFinished`) goes to KubeRay as a `ray.io/v1` RayJob and to
raypilot's worker (authenticating with deploy/'s RBAC) as a workflow, each in a namespace of its own; a watch
sees each RayCluster deleted, and each lag is counted from that side's own `status.endTime` + TTL (KubeRay
writes it to the second, raypilot to the millisecond of the Ray job's end). Then each side's controller goes
away while the deletion waits and comes back `RESTART_GAP_S` later: KubeRay's operator pod is deleted and
created again (a Deployment's rollout), raypilot's worker stops and starts on the same task queue. Then the
same RayJob with a deletion rule (DeleteCluster at SUCCEEDED + TTL) in place of the TTL, which KubeRay
v1.5.0 runs only with its RayJobDeletionPolicy gate on (the shared stack turns it on). And what
each side asked of the API server for one such lifecycle, from kube-apiserver's audit log (its requests in the
RayJob's namespace: the cost that grows with the number of RayJobs).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, cast

from kubernetes import config

from bench.arithmetic import Figure, percentile
from bench.progress import Progress
from bench.realkube_counts import KUBERAY_USER, WORKER_USER
from bench.realkube_stack import shared_real_stack
from bench.suite import BenchContext
from sandbox.realkube.audit import audited_requests
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.kuberay import restart_kuberay
from sandbox.testing import wait_until
from tests.integration.rayjob_support import example, first_raycluster_deletion, parse_time
from tests.integration.stack import Stack, kubeconfig_worker

SIDES = ("kuberay", "raypilot", "kuberay restarted", "raypilot restarted", "kuberay rules", "raypilot rules")
RAYPILOT_USER = WORKER_USER
LAG_TARGET_S = 1.0
RESTART_GAP_S = 3.0
# Longer than either controller is away in the restart runs (KubeRay's pod takes seconds to go and to come
# back Ready), so both are back before the deletion is due.
RESTART_TTL_S = 20


def ttl_manifest(namespace: str, ttl: int) -> dict[str, Any]:
    return example(
        "rayjob-httpmode",
        namespace,
        rename="ttl",
        entrypoint="echo hi",
        shutdownAfterJobFinishes=True,
        ttlSecondsAfterFinished=ttl,
    )


def rules_manifest(namespace: str, ttl: int) -> dict[str, Any]:
    """The same RayJob with a deletion rule instead (KubeRay v1.5.0: behind its RayJobDeletionPolicy gate,
    which the shared stack turns on): its cluster deleted `ttl` s after it SUCCEEDED."""
    rule = {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": ttl}}
    return example(
        "rayjob-httpmode",
        namespace,
        rename="ttl",
        entrypoint="echo hi",
        deletionStrategy={"deletionRules": [rule]},
    )


Manifest = Callable[[str, int], dict[str, Any]]


def kuberay_status(stack: Stack, namespace: str) -> dict[str, Any]:
    found = cast(
        dict[str, Any], stack.custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", "ttl")
    )
    status: dict[str, Any] = found.get("status") or {}
    return status


async def kuberay_run(
    stack: Stack, plane: ControlPlane, ttl: int, restart: bool, manifest: Manifest = ttl_manifest
) -> tuple[float, str]:
    """One RayJob reconciled by KubeRay's operator; its lag after endTime + ttl."""
    namespace = stack.namespace()
    seen = asyncio.create_task(
        asyncio.to_thread(first_raycluster_deletion, stack, namespace, within=ttl + 180)
    )
    await asyncio.to_thread(
        stack.custom.create_namespaced_custom_object,
        "ray.io",
        "v1",
        namespace,
        "rayjobs",
        manifest(namespace, ttl),
    )
    if restart:

        async def complete() -> dict[str, Any] | None:
            status = await asyncio.to_thread(kuberay_status, stack, namespace)
            return status if status.get("jobDeploymentStatus") == "Complete" else None

        done: dict[str, Any] = await wait_until(
            complete, within=180, interval=0.2, what="KubeRay's RayJob Complete"
        )
        assert done["jobStatus"] == "SUCCEEDED", done
        await asyncio.to_thread(restart_kuberay, plane, RESTART_GAP_S)
    deleted_at = await seen
    end_time = parse_time(str((await asyncio.to_thread(kuberay_status, stack, namespace))["endTime"]))
    return deleted_at - (end_time + ttl), namespace


async def raypilot_run(
    stack: Stack,
    ttl: int,
    workers: AsyncExitStack | None,
    kubeconfig: Path,
    manifest: Manifest = ttl_manifest,
) -> tuple[float, str]:
    """One RayJob run by raypilot's workflow; its lag after endTime + ttl (with `workers`, the worker is
    stopped once the RayJob is Complete and started again RESTART_GAP_S later)."""
    namespace = stack.namespace()
    seen = asyncio.create_task(
        asyncio.to_thread(first_raycluster_deletion, stack, namespace, within=ttl + 180)
    )
    handle = await stack.start(manifest(namespace, ttl))
    if workers is not None:
        await stack.wait_status(handle, lambda s: s.get("jobDeploymentStatus") == "Complete")
        await workers.aclose()
        await asyncio.sleep(RESTART_GAP_S)
        await workers.enter_async_context(kubeconfig_worker(stack.client, kubeconfig, stack.task_queue))
    deleted_at = await seen
    end_time = parse_time((await handle.result())["endTime"])
    return deleted_at - (end_time + ttl), namespace


def requests_per_lifecycle(plane: ControlPlane, user: str, namespaces: list[str]) -> str:
    """The median count of `user`'s requests in a run's namespace (its RayJob's whole lifecycle), with the
    verbs of the median run. Cluster-wide lists and watches (KubeRay's informers) serve every RayJob and are
    left out; raypilot's per-namespace observer's are in."""
    counted = sorted(
        (sum(per_verb.values()), per_verb)
        for per_verb in (audited_requests(plane.audit_log, user, namespace) for namespace in namespaces)
    )
    total, per_verb = counted[len(counted) // 2]
    verbs: dict[str, int] = {}
    for key, count in per_verb.items():
        verbs[key.split(" ")[0]] = verbs.get(key.split(" ")[0], 0) + count
    return f"{total} ({', '.join(f'{verb} {n}' for verb, n in sorted(verbs.items()))})"


def summary(lags: list[float]) -> str:
    return f"median {percentile(lags, 50):+.3f} s, max {max(lags):+.3f} s"


async def run(context: BenchContext) -> list[Figure]:
    # The smoke (inside `make test`) leaves out the restart runs: each waits a 20 s TTL.
    runs, restarts, ttl = (1, 0, 4) if context.smoke else (4, 2, 4)
    done: dict[str, list[tuple[float, str]]] = {side: [] for side in SIDES}
    shared = await shared_real_stack(context)
    plane, installed = shared.plane, shared.installed
    api_client = config.new_client_from_config(config_file=str(plane.kubeconfig))
    try:
        workers = AsyncExitStack()
        async with workers:
            queue = await workers.enter_async_context(kubeconfig_worker(context.client, installed.worker))
            stack = Stack(context.client, queue, api_client)
            with Progress("P2K runs", 2 * (2 * runs + restarts)) as bar:

                async def counted(side: str, run_: Awaitable[tuple[float, str]]) -> None:
                    done[side].append(await run_)
                    bar.advance()

                # Alternating, so both sides meet the same machine: the TTL runs, then the rules' runs.
                ttl_runs = [
                    lambda: counted("kuberay", kuberay_run(stack, plane, ttl, restart=False)),
                    lambda: counted("raypilot", raypilot_run(stack, ttl, None, installed.worker)),
                ]
                rules_runs = [
                    lambda: counted("kuberay rules", kuberay_run(stack, plane, ttl, False, rules_manifest)),
                    lambda: counted(
                        "raypilot rules", raypilot_run(stack, ttl, None, installed.worker, rules_manifest)
                    ),
                ]
                await context.in_turn(*ttl_runs * runs, *rules_runs * runs)
                for _ in range(restarts):
                    run_ = await kuberay_run(stack, plane, RESTART_TTL_S, restart=True)
                    done["kuberay restarted"].append(run_)
                    bar.advance()
                    run_ = await raypilot_run(stack, RESTART_TTL_S, workers, installed.worker)
                    done["raypilot restarted"].append(run_)
                    bar.advance()
    finally:
        api_client.close()
    requests = {
        side: requests_per_lifecycle(plane, user, [namespace for _, namespace in done[side]])
        for side, user in (("kuberay", KUBERAY_USER), ("raypilot", RAYPILOT_USER))
    }
    lags = {side: [lag for lag, _ in runs_] for side, runs_ in done.items()}
    worst = max(lags["raypilot"] + lags["raypilot restarted"])
    rules_worst = max(lags["raypilot rules"])
    restart_row = (
        (f"raypilot {summary(lags['raypilot restarted'])}", f"KubeRay {summary(lags['kuberay restarted'])}")
        if restarts
        else ("not run (smoke)", "not run (smoke)")
    )
    return [
        Figure(
            "P2K",
            f"TTL deletion lag after endTime+{ttl} s beside KubeRay v1.5.0 (real stack, {runs} runs each)",
            f"raypilot {summary(lags['raypilot'])}",
            f"KubeRay {summary(lags['kuberay'])}",
            "<= 1 s",
            max(lags["raypilot"]) <= LAG_TARGET_S,
        ),
        Figure(
            "P2K",
            f"the same (TTL {RESTART_TTL_S} s) with each controller gone and back while the deletion "
            f"waits ({restarts} runs each)",
            *restart_row,
            "<= 1 s, survives restart",
            worst <= LAG_TARGET_S if restarts else None,
        ),
        Figure(
            "P2K",
            f"deletionRules (DeleteCluster {ttl} s after SUCCEEDED) lag beside KubeRay v1.5.0 with its "
            f"RayJobDeletionPolicy gate on (real stack, {runs} runs each)",
            f"raypilot {summary(lags['raypilot rules'])}",
            f"KubeRay {summary(lags['kuberay rules'])}",
            "<= 1 s",
            rules_worst <= LAG_TARGET_S,
        ),
        Figure(
            "P2K",
            "Kubernetes API requests of one such RayJob's lifecycle in its namespace, median run (the API "
            "server's audit log; informers' cluster-wide lists and watches left out)",
            f"raypilot's worker {requests['raypilot']}",
            f"KubeRay's operator {requests['kuberay']}",
            "report",
            None,
        ),
    ]
