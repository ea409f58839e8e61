"""Manifests, a running RayServiceWorkflow on the fake world, and waiting on the time-skipping server: what a
time-skipping test of a RayService policy needs besides the world (`raypilot.testing.rayservice_world`).
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.replay import save_history
from raypilot.testing.time_skipping import query_status
from raypilot.testing.worker import running_worker
from workflows.rayservice.state import RayServiceState
from workflows.rayservice.workflow import RayServiceWorkflow

# The workflows `running_rayservice` runs, per environment: `eventually` lets them settle before each skip.
_RUNNING: weakref.WeakKeyDictionary[WorkflowEnvironment, list[Handle]] = weakref.WeakKeyDictionary()
_TASK_IN_FLIGHT = frozenset(
    {EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED}
)
SETTLE_WITHIN_S = 60.0
SETTLE_POLL_S = 0.05

# ---- manifests and running -------------------------------------------------------------------------------

SERVE_CONFIG_V1 = """applications:
  - name: app
    import_path: app:deployment
    route_prefix: /
    deployments:
      - name: Model
        num_replicas: 2
"""


def rayservice_manifest(
    name: str = "svc",
    version: str = "v1",
    *,
    worker_groups: int = 1,
    strategy: dict[str, Any] | None = None,
    deletion_delay: int | None = None,
    serve_config: str = SERVE_CONFIG_V1,
    annotations: dict[str, str] | None = None,
    suspend: bool | None = None,
    autoscaling: bool = False,
) -> dict[str, Any]:
    """A RayService KubeRay accepts; `version` is an env var of the head container (a cluster change)."""
    container = {
        "name": "ray-head",
        "image": "rayproject/ray:2.60.0",
        "env": [{"name": "APP_VERSION", "value": version}],
        "ports": [
            {"name": "gcs-server", "containerPort": 6379},
            {"name": "dashboard", "containerPort": 8265},
            {"name": "client", "containerPort": 10001},
            {"name": "serve", "containerPort": 8000},
        ],
    }
    groups = [
        {
            "groupName": f"group-{index}",
            "replicas": 1,
            "minReplicas": 1,
            "maxReplicas": 2,
            "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]}},
        }
        for index in range(worker_groups)
    ]
    cluster: dict[str, Any] = {
        "rayVersion": "2.60.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}},
        "workerGroupSpecs": groups,
    }
    if autoscaling:
        cluster["enableInTreeAutoscaling"] = True
    spec: dict[str, Any] = {"serveConfigV2": serve_config, "rayClusterConfig": cluster}
    if strategy is not None:
        spec["upgradeStrategy"] = strategy
    if deletion_delay is not None:
        spec["rayClusterDeletionDelaySeconds"] = deletion_delay
    if suspend is not None:
        spec["suspend"] = suspend
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": metadata, "spec": spec}


Handle = WorkflowHandle[Any, Any]
WORKFLOW_ID = "rayservice/default/svc"
# Where `RAYPILOT_RECORD_HISTORIES=<name>` writes a run (from the repository root, as the tests run).
HISTORIES = Path("tests") / "replay" / "histories"


@asynccontextmanager
async def running_rayservice(
    env: WorkflowEnvironment,
    world: FakeRayWorld,
    manifest: dict[str, Any],
    workflow_id: str = WORKFLOW_ID,
    replay_every_task: bool = False,
    carried: RayServiceState | None = None,
    sandboxed: bool = False,
) -> AsyncIterator[Handle]:
    """A worker with the real workflow and `world`'s fake activities, and the started workflow (in
    Temporal's sandbox with `sandboxed`: raypilot/testing/worker.py).

    `replay_every_task` replays the whole history at every workflow task (nondeterminism fails at once);
    off by default because the tests' status queries then sometimes meet an eviction and wait for the
    10 s workflow task timeout. The replay tests cover determinism over recorded histories.
    """
    async with running_worker(
        env.client,
        activities=world.activities(),
        workflows=[RayServiceWorkflow],
        replay_every_task=replay_every_task,
        sandboxed=sandboxed,
    ) as queue:
        args: list[Any] = [manifest] if carried is None else [manifest, carried]
        await env.client.start_workflow("RayServiceWorkflow", args=args, id=workflow_id, task_queue=queue)
        # Without a run id: queries and updates reach the current run after a continue-as-new.
        handle: Handle = env.client.get_workflow_handle(workflow_id, result_type=dict)
        _RUNNING.setdefault(env, []).append(handle)
        try:
            yield handle
        finally:
            _RUNNING[env].remove(handle)
        await record_history(handle)


async def record_history(handle: Handle) -> None:
    """With RAYPILOT_RECORD_HISTORIES=<name>, writes the run's history where the replay tests read it."""
    name = os.environ.get("RAYPILOT_RECORD_HISTORIES")
    if name:
        await save_history(handle, HISTORIES / f"rayservice_{name}.json")


async def eventually(
    env: WorkflowEnvironment,
    probe: Callable[[], Awaitable[bool]],
    step: timedelta = timedelta(seconds=1),
    max_steps: int = 400,
    settle: bool = False,
) -> None:
    """Advance workflow time by `step` until `probe()` holds. A probe whose status query timed out (a worker
    starved by a loaded machine answers late) has not seen the condition yet: it is asked again.

    With `settle`, each step starts once the workflows of `running_rayservice` have no workflow task in
    flight (`settled`). Settling takes real time, which the test server's clock counts too: it is for runs
    without tight bounds in workflow time (the bench)."""
    for _ in range(max_steps):
        try:
            if await probe():
                return
        except RPCError as error:
            # DEADLINE_EXCEEDED: the server's query deadline; CANCELLED "Timeout expired": the client's own.
            if error.status not in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED):
                raise
        for handle in list(_RUNNING.get(env, ())) if settle else ():
            await settled(handle)
        await env.sleep(step)
    raise AssertionError(f"condition not reached within {max_steps} steps of {step}")


async def settled(handle: Handle, within_s: float = SETTLE_WITHIN_S) -> None:
    """Waits (in real time) until the workflow's history shows no workflow task scheduled or running.

    The time-skipping server refuses a workflow task that cancels a timer which fired while the task was with
    the worker ("invalid history builder state for action", where the real server accepts it), and then never
    times that task out or sends it again: the run is stranded and the test hangs. A skip fires the timers in
    its window, so a skip taken while a task is in flight can fire the very timer that task cancels; on a
    loaded machine a task can take seconds. A run that does not settle within `within_s` is left to the skip.
    """
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        kinds = [event.event_type async for event in handle.fetch_history_events()]
        done = max(
            (i for i, kind in enumerate(kinds) if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED),
            default=-1,
        )
        if not any(kind in _TASK_IN_FLIGHT for kind in kinds[done + 1 :]):
            return
        await asyncio.sleep(SETTLE_POLL_S)


async def status_of(handle: Handle) -> dict[str, Any]:
    return await query_status(handle)


def condition_of(status: dict[str, Any], condition_type: str) -> tuple[str, str]:
    for condition in status.get("conditions") or []:
        if condition["type"] == condition_type:
            return str(condition["status"]), str(condition.get("reason") or "")
    return ("", "")


async def until_ready(
    env: WorkflowEnvironment, handle: Handle, cluster_changes: bool = False, settle: bool = False
) -> dict[str, Any]:
    """Until Ready is True with an active cluster and no pending one; returns that status."""
    result: dict[str, Any] = {}

    async def ready() -> bool:
        nonlocal result
        result = await status_of(handle)
        pending = (result.get("pendingServiceStatus") or {}).get("rayClusterName")
        return condition_of(result, "Ready")[0] == "True" and not pending

    await eventually(env, ready, settle=settle)
    return result


# ---- incremental upgrades ------------------------------------------------------------------------------

INCREMENTAL = {
    "type": "NewClusterWithIncrementalUpgrade",
    "clusterUpgradeOptions": {
        "maxSurgePercent": 50,
        "stepSizePercent": 25,
        "intervalSeconds": 10,
        "gatewayClassName": "istio",
    },
}


def incremental_manifest(version: str = "v1") -> dict[str, Any]:
    return rayservice_manifest(version=version, strategy=INCREMENTAL, autoscaling=True, deletion_delay=5)


def timed_sequence(world: FakeRayWorld, since: int, new: str) -> list[tuple[str, int, datetime]]:
    """The capacity and traffic steps as the world saw them after log entry `since`, with their times: each
    change of a cluster's target_capacity (PUT) and of the new cluster's route weight."""
    steps: list[tuple[str, int, datetime]] = []
    capacity = {"pending_capacity": 0, "active_capacity": 100}
    weight = 0
    for act in world.log[since:]:
        if act.verb == "put" and "target_capacity" in act.detail:
            side = "pending_capacity" if act.name == new else "active_capacity"
            if int(act.detail["target_capacity"]) != capacity[side]:
                capacity[side] = int(act.detail["target_capacity"])
                steps.append((side, capacity[side], act.at))
        elif act.kind == "HTTPRoute" and act.detail.get(f"{new}-serve-svc", 0) != weight:
            weight = act.detail[f"{new}-serve-svc"]
            steps.append(("traffic", weight, act.at))
    return steps


def upgrade_sequence(world: FakeRayWorld, since: int, new: str) -> list[tuple[str, int]]:
    return [(kind, value) for kind, value, _ in timed_sequence(world, since, new)]
