"""RayJob sharp edges (issue #16) end to end: the real worker and activities against the simulated sandbox.

No silent leaks (kuberay#5184): activeDeadlineSeconds fails a RayJob whose Ray job is still RUNNING, and its
deletion rules name only SUCCEEDED and FAILED. The user sees a Warning Event on the RayJob and the
RayClusterLeftBehind condition in its status; `raypilot.io/cleanup-after` deletes the cluster anyway.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.rayjob_support import (
    example,
    first_raycluster_deletion,
    parse_time,
    rayjob_events,
)
from tests.integration.stack import Stack
from workflows.decisions.rayjob.leftovers import CLEANUP_AFTER_ANNOTATION

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(180)]

RULES_FOR_SUCCESS_AND_FAILURE = {
    "deletionRules": [
        {"policy": "DeleteCluster", "condition": {"jobStatus": status, "ttlSeconds": 0}}
        for status in ("SUCCEEDED", "FAILED")
    ]
}


async def test_a_cluster_no_deletion_rule_matches_is_reported_then_cleaned_up(simulated_stack: Stack) -> None:
    namespace = simulated_stack.namespace()
    cleanup_seconds = 2
    manifest = example(
        "rayjob-httpmode",
        namespace,
        entrypoint="sleep 600",
        activeDeadlineSeconds=3,
        deletionStrategy=RULES_FOR_SUCCESS_AND_FAILURE,
    )
    manifest["metadata"]["annotations"] = {CLEANUP_AFTER_ANNOTATION: f"{cleanup_seconds}s"}
    deletion_seen = asyncio.create_task(
        asyncio.to_thread(first_raycluster_deletion, simulated_stack, namespace, within=120)
    )
    handle = await simulated_stack.start(manifest)
    reported = await simulated_stack.wait_status(handle, lambda status: bool(status.get("conditions")))
    deleted_at = await deletion_seen
    result = await handle.result()

    # The deadline caught the Ray job before it ended (PENDING or RUNNING in the simulated dashboard).
    assert reported["jobDeploymentStatus"] == "Failed", reported
    assert reported["jobStatus"] in ("PENDING", "RUNNING"), reported
    cluster = result["rayClusterName"]
    [condition] = reported["conditions"]
    assert (condition["type"], condition["status"]) == ("RayClusterLeftBehind", "True")
    assert f"RayCluster {namespace}/{cluster} stays: no deletion rule matches" in condition["message"]
    warnings = [
        e for e in rayjob_events(simulated_stack, namespace, "rayjob-httpmode") if e["type"] == "Warning"
    ]
    assert [(e["reason"], e["message"]) for e in warnings] == [("RayClusterLeftBehind", condition["message"])]
    lag = deleted_at - (parse_time(result["endTime"]) + cleanup_seconds)
    assert -0.05 <= lag <= 1.0, f"RayCluster deletion observed {lag:+.3f} s from endTime + cleanup-after"
    assert not simulated_stack.exists("rayclusters", namespace, cluster)
    assert result["conditions"][0]["status"] == "False"
