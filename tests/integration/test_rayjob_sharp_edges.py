"""RayJob sharp edges (issue #16) end to end: the real worker and activities on the real stack (simulated
Ray).

No silent leaks (kuberay#5184): activeDeadlineSeconds fails a RayJob whose Ray job is still RUNNING, and its
deletion rules name only SUCCEEDED and FAILED. The user sees a Warning Event on the RayJob and the
RayClusterLeftBehind condition in its status; `raypilot.io/cleanup-after` deletes the cluster anyway.

Queueing on a shared cluster (kuberay#2646): clusterSelector RayJobs on a RayCluster annotated
`raypilot.io/max-concurrent-jobs` all complete, never more than the limit of Ray jobs at once. `make test`
runs 10 RayJobs on a limit of 3; RAYPILOT_QUEUE_JOBS=50 runs the full 50 on a limit of 5 (about 2 minutes).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from sandbox.testing import raycluster_manifest
from tests.integration.rayjob_support import (
    assert_deleted_when_due,
    create_raycluster,
    example,
    first_raycluster_deletion,
    parse_time,
    rayjob_events,
)
from tests.integration.stack import Stack
from workflows.decisions.admission import MAX_CONCURRENT_JOBS_ANNOTATION
from workflows.decisions.rayjob.leftovers import CLEANUP_AFTER_ANNOTATION

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(600)]

RULES_FOR_SUCCESS_AND_FAILURE = {
    "deletionRules": [
        {"policy": "DeleteCluster", "condition": {"jobStatus": status, "ttlSeconds": 0}}
        for status in ("SUCCEEDED", "FAILED")
    ]
}


def _left_behind(status: dict[str, Any]) -> list[dict[str, Any]]:
    """The RayClusterLeftBehind condition (a failed Ray job's DriverLogSaved may stand beside it)."""
    return [c for c in status.get("conditions", []) if c["type"] == "RayClusterLeftBehind"]


async def test_a_cluster_no_deletion_rule_matches_is_reported_then_cleaned_up(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    # Long enough for the status poll to catch the condition before the cleanup on a loaded machine (a full
    # CI run read it after a 2 s cleanup had already set it False).
    cleanup_seconds = 6
    manifest = example(
        "rayjob-httpmode",
        namespace,
        entrypoint="sleep 600",
        activeDeadlineSeconds=3,
        deletionStrategy=RULES_FOR_SUCCESS_AND_FAILURE,
    )
    manifest["metadata"]["annotations"] = {CLEANUP_AFTER_ANNOTATION: f"{cleanup_seconds}s"}
    deletion_seen = asyncio.create_task(
        asyncio.to_thread(first_raycluster_deletion, kube_stack, namespace, within=120)
    )
    handle = await kube_stack.start(manifest)
    reported = await kube_stack.wait_status(handle, lambda status: bool(_left_behind(status)))
    deleted_at = await deletion_seen
    result = await handle.result()

    # The deadline caught the Ray job before it ended (not seen yet, PENDING or RUNNING on a loaded machine).
    assert reported["jobDeploymentStatus"] == "Failed", reported
    assert reported.get("jobStatus", "") in ("", "PENDING", "RUNNING"), reported
    cluster = result["rayClusterName"]
    [condition] = _left_behind(reported)
    assert condition["status"] == "True"
    assert f"RayCluster {namespace}/{cluster} stays: no deletion rule matches" in condition["message"]
    warnings = [e for e in rayjob_events(kube_stack, namespace, "rayjob-httpmode") if e["type"] == "Warning"]
    assert [(e["reason"], e["message"]) for e in warnings] == [("RayClusterLeftBehind", condition["message"])]
    await assert_deleted_when_due(handle, deleted_at, parse_time(result["endTime"]) + cleanup_seconds)
    assert not kube_stack.exists("rayclusters", namespace, cluster)
    assert [c["status"] for c in _left_behind(result)] == ["False"]


async def test_many_rayjobs_share_a_cluster_limited_to_a_few(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    count = int(os.environ.get("RAYPILOT_QUEUE_JOBS", "10"))
    limit = 5 if count >= 50 else 3
    shared = raycluster_manifest("shared", namespace)
    shared["metadata"]["annotations"] = {MAX_CONCURRENT_JOBS_ANNOTATION: str(limit)}
    await create_raycluster(kube_stack, shared)
    began = time.monotonic()
    handles = []
    for index in range(count):
        manifest = example(
            "rayjob-httpmode",
            namespace,
            rename=f"shared-{index:02d}",
            entrypoint="sleep 1",
            rayClusterSpec=None,
            clusterSelector={"ray.io/cluster": "shared"},
        )
        handles.append(await kube_stack.start(manifest))
    results = await asyncio.gather(*(handle.result() for handle in handles))
    elapsed = time.monotonic() - began

    assert [r["jobDeploymentStatus"] for r in results] == ["Complete"] * count, results
    spans = [
        (parse_time(r["rayJobInfo"]["startTime"]), parse_time(r["rayJobInfo"]["endTime"])) for r in results
    ]
    busiest = max(sum(1 for begin, end in spans if begin <= moment < end) for moment, _ in spans)
    assert busiest <= limit, f"{busiest} Ray jobs ran at once"
    queued = [r for r in results if any(c["type"] == "Queued" for c in r.get("conditions", []))]
    assert len(queued) == count
    print(f"{count} RayJobs, limit {limit}: {elapsed:.1f} s, at most {busiest} at once")
