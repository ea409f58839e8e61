"""An incremental upgrade (NewClusterWithIncrementalUpgrade) under load through the sandbox's Gateway, shared
by S1(a) (worker kills) and S3 (a faulty API): deploy v1, start a keep-alive client and a
one-connection-per-request client on the Gateway, apply v2 and let the caller disturb the upgrade, wait for
the promotion and the old cluster's deletion, stop the load and report what the run left.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowHandle

from bench.upgrades import Incremental, incremental_rayservice
from raypilot.cli.demo_rayservice import gateway_url
from raypilot.load import SteadyLoad
from sandbox.testing import wait_until
from tests.integration.rayservice_helpers import (
    active_cluster,
    pending_cluster,
    serving_alone,
    wait_for_status,
)
from tests.integration.route_watch import route_weights
from tests.integration.stack import Stack
from tests.reliability.objects import kinds_left, names_seen, store_list
from workflows.decisions.rayservice.drain import DEFAULT_MAX_DRAIN

# Small steps so that the upgrade lasts long enough to be disturbed several times (simulated Ray is fast).
PLAN = Incremental(step_percent=20, interval_s=1, surge_percent=50)
DELETION_DELAY_S = 1  # the old cluster's (bench's manifest says 5 s: nothing here needs that long)
NAME = "upgraded"
# The clients pause between requests: a bounded rate leaves CPU to the worker and the sandbox on 2 cores.
PAUSE_S = 0.05


@dataclass(frozen=True)
class UpgradeOutcome:
    old: str
    new: str
    clusters_seen: set[str]
    before: Counter[str]  # objects per kind but Pods while v1 served alone (what a finished upgrade leaves)
    after: Counter[str]
    stray_pods: list[str]  # Pods of any RayCluster but the new one (its own Pods follow its autoscaler)
    routes: int  # HTTPRoutes left
    weights: dict[str, int]  # the HTTPRoute's backends and weights at the end
    requests: int
    failures: list[str]  # one line per failed request (client, detail)

    def leftover_difference(self) -> list[str]:
        extra = [f"+{count} {kind}" for kind, count in (self.after - self.before).items()]
        missing = [f"-{count} {kind}" for kind, count in (self.before - self.after).items()]
        return extra + missing + [f"+1 Pod {name}" for name in self.stray_pods]

    def same_end_state(self) -> bool:
        """What an undisturbed upgrade ends with: v2 alone behind the route, exactly two RayClusters ever,
        the same objects per kind as before the upgrade."""
        return (
            self.clusters_seen == {self.old, self.new}
            and self.weights == {f"{self.new}-serve-svc": 100}
            and self.routes == 1
            and not self.leftover_difference()
        )


def manifest(namespace: str, version: str) -> dict[str, Any]:
    body = incremental_rayservice(namespace, NAME, version, PLAN)
    body["spec"]["rayClusterDeletionDelaySeconds"] = DELETION_DELAY_S
    return body


async def serve_url(stack: Stack, namespace: str) -> str:
    """The Gateway's address, read from the store (an API fault injected by S3 must not fail the reading)."""

    async def url() -> str | None:
        gateways = store_list(stack, "gateway.networking.k8s.io/v1", "Gateway", namespace)
        named = [gateway for gateway in gateways if gateway["metadata"]["name"] == f"{NAME}-gateway"]
        return gateway_url(named[0]) if named else None

    found: str = await wait_until(url, within=60, interval=0.1, what="Gateway programmed")
    return found


def kinds_but_pods(stack: Stack, namespace: str) -> Counter[str]:
    """Objects per owned kind but Pods: the in-tree autoscaler sizes a cluster's workers as load comes
    and goes, so its Pod count is no end state to compare (`stray_pods` checks them instead)."""
    counts = kinds_left(stack, namespace)
    del counts["Pod"]
    return counts


def stray_pods(stack: Stack, namespace: str, cluster: str) -> list[str]:
    return [
        pod["metadata"]["name"]
        for pod in store_list(stack, "v1", "Pod", namespace)
        if not pod["metadata"].get("deletionTimestamp")
        and (pod["metadata"].get("labels") or {}).get("ray.io/cluster") != cluster
    ]


def http_route(stack: Stack, namespace: str) -> list[dict[str, Any]]:
    return store_list(stack, "gateway.networking.k8s.io/v1", "HTTPRoute", namespace)


async def upgrade_under_load(
    stack: Stack,
    namespace: str,
    start: Callable[[dict[str, Any]], Awaitable[WorkflowHandle[Any, Any]]],
    disturb: Callable[[WorkflowHandle[Any, Any], Callable[[], Awaitable[bool]]], Awaitable[None]],
    *,
    within: float = 240,
) -> tuple[WorkflowHandle[Any, Any], UpgradeOutcome]:
    """v1 -> v2 under two clients; `disturb(handle, upgrading)` runs right after the apply (it may kill the
    worker, inject faults...; `upgrading()` is False once v2 was promoted). The RayService stays (the caller
    deletes it)."""
    handle = await start(manifest(namespace, "v1"))
    await wait_for_status(stack, handle, serving_alone, within=within, what="v1 serving alone")
    old = active_cluster(await stack.status(handle))
    url = await serve_url(stack, namespace)

    async def routed_to_v1() -> bool:
        return [route_weights(route) for route in http_route(stack, namespace)] == [{f"{old}-serve-svc": 100}]

    # The status says Running one pass before the HTTPRoute exists (as in KubeRay), longer when the API failed
    # its creation (S3 saw the Gateway answer 404 meanwhile): the load starts once the route sends all to v1.
    await wait_until(routed_to_v1, within=within, interval=0.1, what="the HTTPRoute sending v1 all traffic")
    before = kinds_but_pods(stack, namespace)
    kept = SteadyLoad(url, concurrency=2, keep_alive=True, pause_s=PAUSE_S)
    short = SteadyLoad(url, concurrency=2, keep_alive=False, pause_s=PAUSE_S)
    async with names_seen(stack, namespace) as clusters, kept, short:
        await kept.wait_for_requests(10)
        await short.wait_for_requests(10)
        applied = time.monotonic()
        await handle.execute_update("apply", manifest(namespace, "v2"))

        def promoted(status: dict[str, Any]) -> bool:
            return active_cluster(status) not in ("", old) and not pending_cluster(status)

        async def upgrading() -> bool:
            return not promoted(await stack.status(handle))

        await disturb(handle, upgrading)
        upgraded = await wait_for_status(stack, handle, promoted, within=within, what="v2 promoted")
        new = active_cluster(upgraded)

        async def old_cluster_gone() -> bool:
            names = {c["metadata"]["name"] for c in store_list(stack, "ray.io/v1", "RayCluster", namespace)}
            return names == {new}

        # After its delay the old cluster is drained (on by default), DEFAULT_MAX_DRAIN at most.
        within = 60 + DEFAULT_MAX_DRAIN.total_seconds()
        await wait_until(old_cluster_gone, within=within, interval=0.1, what="only the v2 cluster left")
        # A few more answers from v2 alone: requests right after the old cluster's deletion count too.
        await kept.wait_for_requests(len(kept.samples) + 10)
        await short.wait_for_requests(len(short.samples) + 10)
    routes = [r for r in http_route(stack, namespace) if not r["metadata"].get("deletionTimestamp")]
    failures = [
        f"{client}: {sample.detail} {sample.at - applied:+.1f} s from the apply"
        for client, load in (("keep-alive", kept), ("connection per request", short))
        for sample in load.failures
    ]
    outcome = UpgradeOutcome(
        old=old,
        new=new,
        clusters_seen=set(clusters),
        before=before,
        after=kinds_but_pods(stack, namespace),
        stray_pods=stray_pods(stack, namespace, new),
        routes=len(routes),
        weights=route_weights(routes[0]) if routes else {},
        requests=len(kept.samples) + len(short.samples),
        failures=failures,
    )
    return handle, outcome
