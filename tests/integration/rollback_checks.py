"""Automatic rollback and fast undo of a blue-green RayService under steady load (issue #18), shared by the
real stack's tests with simulated Ray (in `make test`) and with real Ray (opt-in) and by bench/RESULTS.md's
figures.

1. v1 serves under a steady load through `<rs>-serve-svc` (a connection per request).
2. v2 whose Serve application cannot be imported (DEPLOY_FAILED on its new cluster): raypilot.io/rollout's
   onUnhealthy (Abort) rolls it back by itself; the Services never leave v1; 0 failed requests.
3. v2 that works: promoted; v1's cluster is kept for rayClusterDeletionDelaySeconds.
4. `undo` inside that window: the Services select v1's cluster again, measured in wall time from the update
   to the first moment only v1 answers; 0 failed requests; no new RayCluster.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from models.rollout import ANNOTATION_ROLLOUT
from raypilot.load import SteadyLoad
from tests.integration.rayservice_helpers import (
    active_cluster,
    head_alone,
    is_running,
    pending_cluster,
    rayservice,
    serve_service_answering,
    wait_for_status,
)
from tests.integration.stack import Stack

UNDO_WINDOW_S = 300  # rayClusterDeletionDelaySeconds: long enough that the undo comes inside it
BROKEN_IMPORT = "sandbox.apps.no_such_module:app"  # ModuleNotFoundError: DEPLOY_FAILED


@dataclass(frozen=True)
class RollbackRun:
    requests: int
    failed: int
    rollback_s: float  # from the v2 apply to the status without a pending cluster (rolled back)
    rollback_after_failure_s: float  # from the first DEPLOY_FAILED seen in the status to the rollback
    undo_s: float  # from the undo update to the first moment only v1 answers
    new_clusters_at_undo: int  # RayClusters that appeared after the undo (0: in place)


UNDO_LIMIT_S = 5.0


def assert_rolled_back_and_undone_in_place(run: RollbackRun) -> None:
    """No request failed, and the undo moved the traffic back to v1 within UNDO_LIMIT_S on no new cluster."""
    assert run.failed == 0, run
    assert run.new_clusters_at_undo == 0, run
    assert run.undo_s < UNDO_LIMIT_S, run


def manifest(namespace: str, name: str, version: str, *, broken: bool = False) -> dict[str, Any]:
    body = head_alone(rayservice(namespace, name, version))
    body["spec"]["rayClusterDeletionDelaySeconds"] = UNDO_WINDOW_S
    body["metadata"]["annotations"] = {ANNOTATION_ROLLOUT: json.dumps({"onUnhealthy": "Abort"})}
    if broken:
        body["spec"]["serveConfigV2"] = body["spec"]["serveConfigV2"].replace(
            "sandbox.apps.versioned:app", BROKEN_IMPORT
        )
    return body


def _cluster_names(stack: Stack, namespace: str) -> set[str]:
    found: Any = stack.custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
    return {item["metadata"]["name"] for item in found["items"]}


def _deploy_failed(status: dict[str, Any]) -> bool:
    apps = (status.get("pendingServiceStatus") or {}).get("applicationStatuses") or {}
    return any(app.get("status") == "DEPLOY_FAILED" for app in apps.values())


async def check_rollback_and_undo(stack: Stack, *, within: float) -> RollbackRun:
    namespace, name = stack.namespace(), "undo"
    handle = await stack.start(manifest(namespace, name, "v1"))
    first = await wait_for_status(stack, handle, is_running, within=within, what="v1 Running")
    v1 = active_cluster(first)
    serve = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
    assert serve is not None
    url = f"http://{serve.cluster_ip}:8000/"
    await serve_service_answering(url)  # the load counts the upgrade's failures
    async with SteadyLoad(url, concurrency=4, keep_alive=False, pause_s=0.02) as load:
        await load.wait_for_requests(100)
        applied_at = time.monotonic()
        await handle.execute_update("apply", manifest(namespace, name, "v2", broken=True))
        failed_seen: list[float] = []

        def rolled_back(status: dict[str, Any]) -> bool:
            if _deploy_failed(status) and not failed_seen:
                failed_seen.append(time.monotonic())
            revisions = status.get("revisions") or []
            settled = bool(revisions) and revisions[-1].get("outcome") == "RolledBack"
            return settled and not pending_cluster(status)

        await wait_for_status(stack, handle, rolled_back, within=within, what="broken v2 rolled back")
        rolled_back_at = time.monotonic()
        assert set(load.counts()) == {"v1"}, [(s.at - applied_at, s.detail) for s in load.failures]

        await handle.execute_update("apply", manifest(namespace, name, "v3"))
        promoted = await wait_for_status(
            stack,
            handle,
            lambda s: active_cluster(s) not in ("", v1) and not pending_cluster(s),
            within=within,
            what="v3 promoted",
        )
        v3 = active_cluster(promoted)
        await load.wait_for_requests(len(load.samples) + 100)
        assert stack.exists("rayclusters", namespace, v1)  # kept for the deletion delay: the undo window
        before_undo = _cluster_names(stack, namespace)

        undo_at = time.monotonic()
        result = await handle.execute_update("undo", {"toRevision": 1}, result_type=dict)
        assert result["how"] == "InPlace", result

        async def only_v1_answers() -> bool:
            await load.wait_for_requests(len(load.samples) + 8)
            recent = load.samples[-8:]
            return all(sample.version == "v1" for sample in recent)

        while not await only_v1_answers():
            assert time.monotonic() - undo_at < within, "v1 never answered alone after the undo"
        # the first sample of the final all-v1 run: when the traffic was back
        last_other = max(
            (s.at for s in load.samples if s.version != "v1" and s.at >= undo_at), default=undo_at
        )
        undo_s = last_other - undo_at
        back = await wait_for_status(
            stack, handle, lambda s: active_cluster(s) == v1, within=60, what="v1 active again"
        )
        assert active_cluster(back) == v1
        await load.wait_for_requests(len(load.samples) + 100)
        new_clusters = _cluster_names(stack, namespace) - before_undo
    del v3  # left for the module's teardown: the delete update would wait for three clusters to go
    return RollbackRun(
        requests=len(load.samples),
        failed=len(load.failures),
        rollback_s=rolled_back_at - applied_at,
        rollback_after_failure_s=rolled_back_at - (failed_seen[0] if failed_seen else rolled_back_at),
        undo_s=undo_s,
        new_clusters_at_undo=len(new_clusters),
    )
