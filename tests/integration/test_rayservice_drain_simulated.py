"""Drained deletion on the simulated sandbox with the real worker (the small version of
bench/rayservice_drain.py): requests longer than rayClusterDeletionDelaySeconds are still answered by the old
cluster after a blue-green switch, the old cluster goes only once they are done, and a kept-alive connection
that sat idle on the old cluster is closed with it, so the client's next request reaches the new cluster."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from tests.integration.rayservice_helpers import (
    DELETION_DELAY_S,
    active_cluster,
    is_running,
    pending_cluster,
    rayservice,
    wait_for_status,
)
from tests.integration.stack import Stack
from workflows.decisions.rayservice.drain import MAX_DRAIN_ANNOTATION

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(300)]

MAX_DRAIN_S = 120
# Still running when the deletion delay ends (the switch comes 1-3 s after they are sent on an idle machine).
LONG_REQUEST_S = DELETION_DELAY_S + 8
LONG = {"work_s": LONG_REQUEST_S}


def draining_rayservice(namespace: str, name: str, version: str) -> dict[str, Any]:
    manifest = rayservice(namespace, name, version)
    manifest["metadata"]["annotations"] = {MAX_DRAIN_ANNOTATION: str(MAX_DRAIN_S)}
    return manifest


async def test_long_requests_finish_on_the_old_cluster_before_it_is_deleted(simulated_stack: Stack) -> None:
    stack = simulated_stack
    namespace, name = stack.namespace(), "drained"
    handle = await stack.start(draining_rayservice(namespace, name, "v1"))
    old = active_cluster(await wait_for_status(stack, handle, is_running, within=120, what="v1 Running"))
    spec = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
    assert spec is not None
    url = f"http://{spec.cluster_ip}:8000/"
    async with (
        httpx.AsyncClient(timeout=MAX_DRAIN_S) as kept_alive,
        httpx.AsyncClient(timeout=MAX_DRAIN_S) as fresh,
    ):
        first = await kept_alive.get(url)  # its connection stays open on the old cluster
        assert first.json()["version"] == "v1"
        await handle.execute_update("apply", draining_rayservice(namespace, name, "v2"))
        await wait_for_status(stack, handle, pending_cluster, within=60, what="pending cluster chosen")
        # Each on its own connection, sent while the Service still selects the old cluster.
        long_requests = [
            asyncio.create_task(
                fresh.get(url, params={"work_s": LONG_REQUEST_S}, headers={"Connection": "close"})
            )
            for _ in range(3)
        ]
        sent_at = time.monotonic()
        switched = await wait_for_status(
            stack,
            handle,
            lambda status: active_cluster(status) not in ("", old) and not pending_cluster(status),
            within=120,
            what="the new cluster promoted",
        )
        switched_at = time.monotonic()
        assert active_cluster(switched) != old
        answers = await asyncio.gather(*long_requests, return_exceptions=True)
        answered_at = time.monotonic()
        # Past the deletion delay, the old cluster waited for the long requests.
        assert all(isinstance(a, httpx.Response) and a.status_code == 200 for a in answers), answers
        assert {a.json()["version"] for a in answers if isinstance(a, httpx.Response)} == {"v1"}
        assert answered_at - switched_at > DELETION_DELAY_S
        deadline = time.monotonic() + 60
        while stack.exists("rayclusters", namespace, old):
            assert time.monotonic() < deadline, "old cluster not deleted after its requests ended"
            await asyncio.sleep(0.2)
        gone_at = time.monotonic()
        print(  # visible with -s: what the run measured
            f"drain: switch {switched_at - sent_at:.1f} s after the long requests were sent, answered "
            f"{answered_at - switched_at:.1f} s after it, old cluster gone {gone_at - switched_at:.1f} s "
            "after it"
        )
        # The idle kept-alive connection was closed with the old cluster; the next request opens a new one.
        after = await kept_alive.get(url)
        assert after.status_code == 200
        assert after.json()["version"] == "v2"
    await handle.execute_update("delete")
