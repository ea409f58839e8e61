"""What P1 and P6 share: a RayService upgraded under a steady load on a stack (simulated or real Ray), with
the HTTPRoute's weights followed meanwhile (tests/integration/route_watch.py) and the route updates read
from the workflow's history afterwards (their workflow time).

Each run: deploy v1 and wait until it serves alone; start the load and let `steady` requests pass (the
reference); apply v2 and wait for its promotion; keep the load on until `during` requests arrived since the
apply; delete the RayService.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from temporalio.client import WorkflowHandle

from bench.arithmetic import parse_event_time, percentile
from raypilot.load import SteadyLoad
from sandbox.testing import wait_until
from tests.integration.rayservice_helpers import active_cluster, is_running, pending_cluster, rayservice
from tests.integration.route_watch import RouteRecorder, route_weights, routed_gateway_url
from tests.integration.stack import Stack
from tests.integration.test_rayservice_incremental import serving_alone
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


def load_stats(load: SteadyLoad, since: float, until: float) -> LoadStats:
    samples = [sample for sample in load.samples if since <= sample.at < until]
    latencies = [sample.latency_s for sample in samples] or [0.0]
    failed = sum(1 for sample in samples if sample.version == "failed")
    return LoadStats(len(samples), failed, percentile(latencies, 50), percentile(latencies, 99))


@dataclass(frozen=True)
class UpgradeRun:
    steady: LoadStats
    upgrade: LoadStats
    upgrade_s: float
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
    stack: Stack, plan: Incremental | None, *, steady: int, during: int, concurrency: int = 4
) -> UpgradeRun:
    """One v1 -> v2 upgrade (incremental with `plan`, else blue-green) under a steady load."""
    namespace, name = stack.namespace(), "bench-rs"

    def manifest(version: str) -> dict[str, Any]:
        if plan is None:
            return rayservice(namespace, name, version)
        return incremental_rayservice(namespace, name, version, plan)

    handle = await stack.start(manifest("v1"))
    await stack.wait_status(
        handle, serving_alone if plan else is_running, within=PROMOTION_WITHIN_S, what="v1 serving"
    )
    old = active_cluster(await stack.status(handle))
    url = await service_url(stack, namespace, name, plan is not None)
    route = RouteRecorder(stack.custom, namespace, f"{name}-httproute")
    # Blue-green switches a Service's selector: only new connections follow it, so one per request.
    load = SteadyLoad(url, concurrency=concurrency, keep_alive=plan is not None, pause_s=0.02)
    try:
        async with load, route:
            began = time.monotonic()
            await load.wait_for_requests(steady)
            applied, applied_at = time.monotonic(), datetime.now(UTC)
            await handle.execute_update("apply", manifest("v2"))
            await stack.wait_status(
                handle,
                lambda s: active_cluster(s) not in ("", old) and not pending_cluster(s),
                within=PROMOTION_WITHIN_S,
                what="v2 promoted",
            )
            promoted = time.monotonic()
            await load.wait_for_requests(len([s for s in load.samples if s.at < applied]) + during)
            ended = time.monotonic()
        new = active_cluster(await stack.status(handle))
    finally:
        await handle.execute_update("delete")
    backend = f"{new}-serve-svc"
    updates = await route_updates(handle, applied_at, backend) if plan else []
    workflow_steps = [((at - updates[0][0]).total_seconds(), weight) for at, weight in updates]
    weights: list[tuple[float, int]] = []
    for change in route.changes:
        weight = change.weight_of(backend)
        if weight > 0 and (not weights or weights[-1][1] != weight):
            weights.append((change.at, weight))
    route_steps = [(at - weights[0][0], weight) for at, weight in weights] if weights else []
    return UpgradeRun(
        steady=load_stats(load, began, applied),
        upgrade=load_stats(load, applied, ended),
        upgrade_s=promoted - applied,
        workflow_steps=workflow_steps,
        route_steps=route_steps,
    )
