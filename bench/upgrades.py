"""What P1 and P6 share: a RayService upgraded under a steady load on a stack (simulated or real Ray), run by
raypilot's workflow or by KubeRay's operator (bench/rayservice_sides.py), with the HTTPRoute's weights
followed meanwhile (tests/integration/route_watch.py) and, for raypilot, the route updates read from the
workflow's history afterwards (their workflow time).

Each run, in a namespace of its own: deploy v1 and wait until it serves alone; start the load (clients of
one kind or both) and let `steady` requests pass (the reference); apply v2 and wait for its promotion; keep
the load on until `during` requests arrived since the apply; delete the RayService and wait until its
clusters' Pods are gone.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import itertools
import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from temporalio.client import WorkflowHandle

from bench.arithmetic import parse_event_time, percentile
from bench.rayservice_sides import RaypilotSide, SideKind, clusters_gone, service_side
from raypilot.load import FAILED, Sample, SteadyLoad
from sandbox.testing import wait_until
from tests.integration.rayservice_helpers import (
    active_cluster,
    is_running,
    pending_cluster,
    rayservice,
    serving_alone,
)
from tests.integration.route_watch import RouteRecorder, route_weights, routed_gateway_url
from tests.integration.stack import Stack
from wire import names

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROMOTION_WITHIN_S = 480.0  # a real head may take minutes to start on a loaded 2-core machine


@dataclass(frozen=True)
class Incremental:
    step_percent: int
    interval_s: int
    surge_percent: int


def incremental_rayservice(namespace: str, name: str, version: str, plan: Incremental) -> dict[str, Any]:
    """examples/rayservice-incremental.yaml answering `version`, with the plan's step, interval and surge."""
    body: dict[str, Any] = copy.deepcopy(
        yaml.safe_load((EXAMPLES / "rayservice-incremental.yaml").read_text())
    )
    body["metadata"] = {"name": name, "namespace": namespace}
    spec = body["spec"]
    spec["rayClusterDeletionDelaySeconds"] = 5
    spec["upgradeStrategy"]["clusterUpgradeOptions"].update(
        maxSurgePercent=plan.surge_percent, stepSizePercent=plan.step_percent, intervalSeconds=plan.interval_s
    )
    head = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [{"name": "APP_VERSION", "value": version}]
    return body


@dataclass(frozen=True)
class LoadStats:
    requests: int
    failed: int
    p50_s: float
    p99_s: float


def load_stats(samples: Iterable[Sample], since: float, until: float) -> LoadStats:
    window = [sample for sample in samples if since <= sample.at < until]
    latencies = [sample.latency_s for sample in window] or [0.0]
    failed = sum(1 for sample in window if sample.version == FAILED)
    return LoadStats(len(window), failed, percentile(latencies, 50), percentile(latencies, 99))


KEEP_ALIVE = "keep-alive"
PER_REQUEST = "one connection per request"


@dataclass(frozen=True)
class Clients:
    """The load's clients of each kind: kept-alive connections (a pooled HTTP client), or a new connection per
    request. A Service's selector switch (blue-green) moves only new connections: a kept-alive one stays on
    the old cluster until that cluster goes."""

    keep_alive: int = 0
    per_request: int = 0

    def kinds(self) -> list[tuple[str, int]]:
        return [
            (kind, n) for kind, n in ((KEEP_ALIVE, self.keep_alive), (PER_REQUEST, self.per_request)) if n
        ]

    def text(self) -> str:
        return " + ".join(f"{n} {kind.replace(' ', '-')}" for kind, n in self.kinds()) + " clients"


def default_clients(incremental: bool, concurrency: int) -> Clients:
    return Clients(keep_alive=concurrency) if incremental else Clients(per_request=concurrency)


@dataclass(frozen=True)
class UpgradeRun:
    steady: LoadStats
    upgrade: LoadStats
    upgrade_s: float
    by_kind: dict[str, tuple[LoadStats, LoadStats]]  # client kind -> (steady, upgrade)
    workflow_steps: list[tuple[float, int]]  # (seconds since the first step, percent), workflow time
    route_steps: list[tuple[float, int]]  # (seconds since the first step, weight), as the route showed them

    def workflow_gaps(self) -> list[float]:
        return [later[0] - earlier[0] for earlier, later in itertools.pairwise(self.workflow_steps)]

    def route_gaps(self) -> list[float]:
        return [later[0] - earlier[0] for earlier, later in itertools.pairwise(self.route_steps)]


async def route_updates(
    handle: WorkflowHandle[Any, Any], since: datetime, backend: str
) -> list[tuple[datetime, int]]:
    """(workflow time, weight of `backend`) of each HTTPRoute update after `since` that set a new positive
    weight for it: the traffic steps as the workflow made them, read from the activities' inputs."""
    history = await handle.fetch_history()
    steps: list[tuple[datetime, int]] = []
    for event in history.to_json_dict()["events"]:
        attributes = event.get("activityTaskScheduledEventAttributes") or {}
        if (attributes.get("activityType") or {}).get("name") != names.UPDATE_HTTPROUTE_SPEC:
            continue
        at = parse_event_time(event["eventTime"])
        payload = json.loads(base64.b64decode(attributes["input"]["payloads"][0]["data"]))
        weight = route_weights({"spec": payload["spec"]}).get(backend, 0)
        if at >= since and weight > 0 and (not steps or steps[-1][1] != weight):
            steps.append((at, weight))
    return steps


async def service_url(stack: Stack, namespace: str, name: str, incremental: bool) -> str:
    """Where clients send, once it answers: the serve Service's clusterIP, or (incremental) the Gateway once
    it routes. A new Service's clusterIP answers once kube-proxy has programmed its rules, which may be a
    moment after the RayService says Running: a load started before would count that moment as failures of
    the upgrade it measures."""
    if incremental:
        url = await routed_gateway_url(stack.custom, namespace, name)
    else:
        spec = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
        assert spec is not None, f"{name}-serve-svc has no spec"
        url = f"http://{spec.cluster_ip}:8000/"
    await wait_until(lambda: answers(url), within=60, interval=0.2, what=f"{url} answering")
    return url


async def answers(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=2.0, trust_env=False) as http:
            return (await http.get(url)).status_code == 200
    except httpx.HTTPError:
        return False


async def upgrade_under_load(
    stack: Stack,
    plan: Incremental | None,
    *,
    steady: int,
    during: int,
    concurrency: int = 4,
    side: SideKind = "raypilot",
    clients: Clients | None = None,
) -> UpgradeRun:
    """One v1 -> v2 upgrade (incremental with `plan`, else blue-green) of a RayService run by `side`, under
    a steady load of `clients` (default: `concurrency` one-connection-per-request clients for blue-green,
    kept-alive ones for incremental), in a namespace of its own. Each kind of client sends its share of
    `steady` and of `during` requests."""
    namespace, name = stack.namespace(), "bench-rs"
    clients = clients or default_clients(plan is not None, concurrency)
    total = sum(n for _, n in clients.kinds())

    def manifest(version: str) -> dict[str, Any]:
        if plan is None:
            return rayservice(namespace, name, version)
        return incremental_rayservice(namespace, name, version, plan)

    def share(count: int, n: int) -> int:
        return math.ceil(count * n / total)

    service = service_side(side, stack, namespace, name)
    await service.deploy(manifest("v1"))
    await service.wait_status(
        serving_alone if plan else is_running, within=PROMOTION_WITHIN_S, what="v1 serving"
    )
    old = active_cluster(await service.status())
    url = await service_url(stack, namespace, name, plan is not None)
    route = RouteRecorder(stack.custom, namespace, f"{name}-httproute")
    loads = [
        (kind, n, SteadyLoad(url, concurrency=n, keep_alive=kind == KEEP_ALIVE, pause_s=0.02))
        for kind, n in clients.kinds()
    ]
    try:
        async with contextlib.AsyncExitStack() as running:
            for _, _, load in loads:
                await running.enter_async_context(load)
            await running.enter_async_context(route)
            began = time.monotonic()
            await asyncio.gather(*(load.wait_for_requests(share(steady, n)) for _, n, load in loads))
            applied, applied_at = time.monotonic(), datetime.now(UTC)
            before = [len([s for s in load.samples if s.at < applied]) for _, _, load in loads]
            await service.apply(manifest("v2"))
            await service.wait_status(
                lambda s: active_cluster(s) not in ("", old) and not pending_cluster(s),
                within=PROMOTION_WITHIN_S,
                what="v2 promoted",
            )
            promoted = time.monotonic()
            await asyncio.gather(
                *(
                    load.wait_for_requests(count + share(during, n))
                    for count, (_, n, load) in zip(before, loads, strict=True)
                )
            )
            ended = time.monotonic()
        new = active_cluster(await service.status())
    finally:
        await service.delete()
    await clusters_gone(stack, namespace)
    backend = f"{new}-serve-svc"
    updates = (
        await route_updates(service.handle, applied_at, backend)
        if plan and isinstance(service, RaypilotSide)
        else []
    )
    workflow_steps = [((at - updates[0][0]).total_seconds(), weight) for at, weight in updates]
    weights: list[tuple[float, int]] = []
    for change in route.changes:
        weight = change.weight_of(backend)
        if weight > 0 and (not weights or weights[-1][1] != weight):
            weights.append((change.at, weight))
    route_steps = [(at - weights[0][0], weight) for at, weight in weights] if weights else []
    samples = [sample for _, _, load in loads for sample in load.samples]
    return UpgradeRun(
        steady=load_stats(samples, began, applied),
        upgrade=load_stats(samples, applied, ended),
        upgrade_s=promoted - applied,
        by_kind={
            kind: (load_stats(load.samples, began, applied), load_stats(load.samples, applied, ended))
            for kind, _, load in loads
        },
        workflow_steps=workflow_steps,
        route_steps=route_steps,
    )
