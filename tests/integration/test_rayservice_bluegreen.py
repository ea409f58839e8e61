"""RayService on real Ray heads on the real stack: served through the API server's Service proxy and the serve
Service's clusterIP, a NewCluster blue-green upgrade v1 -> v2 under steady load on that clusterIP (kube-proxy,
a connection per request), and Serve replica ranks in the status while target_capacity
moves 50 -> 100 -> 50.

The blue-green test costs two heads (old and new cluster), the ranks test one more.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from raypilot.load import SteadyLoad
from sandbox.testing import wait_until
from tests.integration.rayservice_helpers import (
    DELETION_DELAY_S,
    active_cluster,
    check_ranks_through_target_capacities,
    head_alone,
    is_running,
    promoted_away_from,
    rayservice,
    selected_cluster,
    serve_service_answering,
    wait_for_status,
)
from tests.integration.stack import Stack
from workflows.decisions.rayservice.drain import DEFAULT_MAX_DRAIN

pytestmark = [pytest.mark.ray, pytest.mark.devserver, pytest.mark.timeout(900)]

AFTER_DELETION_REQUESTS = 300  # answers counted once the old cluster is gone


async def test_blue_green_upgrade_under_load_loses_no_request(real_ray_kube_stack: Stack) -> None:
    stack = real_ray_kube_stack
    namespace, name = stack.namespace(), "bluegreen"
    handle = await stack.start(head_alone(rayservice(namespace, name, "v1")))
    first = await wait_for_status(stack, handle, is_running, within=180, what="v1 Running")
    old = active_cluster(first)
    serve_spec = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
    assert serve_spec is not None
    url = f"http://{serve_spec.cluster_ip}:8000/"
    await serve_service_answering(url)
    # And through the API server's Service proxy, as `kubectl proxy` users reach it (the serve Service's port
    # is named `serve`, as KubeRay names it).
    proxied = await asyncio.to_thread(
        lambda: (
            stack.core.connect_get_namespaced_service_proxy(
                f"{name}-serve-svc:serve", namespace, _preload_content=False
            ).data
        )
    )
    assert json.loads(proxied)["version"] == "v1", proxied

    # A connection per request: a Service routes connections, so only new ones follow a selector switch (with
    # kept-alive connections the answers switch when the old cluster is deleted, failing what is in flight).
    async with SteadyLoad(url, concurrency=4, keep_alive=False, pause_s=0.02) as load:
        await load.wait_for_requests(200)
        assert load.counts() == {"v1": len(load.samples)}, load.failures[:3]
        await handle.execute_update("apply", head_alone(rayservice(namespace, name, "v2")))
        # A real head starts in ~7 s on an idle machine, in minutes beside other heads on 2 busy cores.
        switched = await promoted_away_from(stack, handle, old, within=480)
        switched_at = time.monotonic()
        new = active_cluster(switched)
        # The Services were re-pointed before the status named the new cluster active; the old cluster is kept
        # for rayClusterDeletionDelaySeconds, then drained (on by default: DEFAULT_MAX_DRAIN at most).
        assert selected_cluster(stack, namespace, f"{name}-serve-svc") == new
        assert selected_cluster(stack, namespace, f"{name}-head-svc") == new
        assert stack.exists("rayclusters", namespace, old)

        await wait_until(
            lambda: not stack.exists("rayclusters", namespace, old),
            within=DELETION_DELAY_S + DEFAULT_MAX_DRAIN.total_seconds() + 30,
            interval=0.2,
            what="old cluster deleted",
        )
        assert time.monotonic() - switched_at >= DELETION_DELAY_S - 1
        gone_at = time.monotonic()
        await load.wait_for_requests(len(load.samples) + AFTER_DELETION_REQUESTS)

    failures = load.failures
    when = [f"{sample.at - switched_at:+.3f} s: {sample.detail}" for sample in failures[:10]]
    assert not failures, f"{len(failures)} of {len(load.samples)} requests failed, from the switch: {when}"
    counts = load.counts()
    assert counts["v1"] > 0, counts
    assert counts["v2"] > 0, counts
    # v1 answers end and v2 answers begin around the switch; after it (the sandbox's Service proxies learn the
    # new selector within a moment) only v2 answers.
    last_v1 = max(sample.at for sample in load.samples if sample.version == "v1")
    assert last_v1 < switched_at + 1.0
    assert set(load.counts(since=switched_at + 1.0)) == {"v2"}
    assert load.counts(since=gone_at)["v2"] >= AFTER_DELETION_REQUESTS
    print(  # visible with -s: what the run measured
        f"blue-green: {len(load.samples)} requests {dict(counts)}, 0 failed; last v1 "
        f"{last_v1 - switched_at:+.2f} s from the switch; old cluster gone {gone_at - switched_at:.1f} s "
        "after it"
    )
    await handle.execute_update("delete")  # frees its Ray head for the next test


async def test_replica_ranks_are_contiguous_once_settled_at_each_target_capacity(
    real_ray_kube_stack: Stack,
) -> None:
    await check_ranks_through_target_capacities(real_ray_kube_stack, within=240)
