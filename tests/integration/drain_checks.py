"""Drained deletion checked on a stack (simulated or real Ray): long requests sent to the old cluster right
before a blue-green switch are answered by it, and it is deleted only after them; an idle kept-alive
connection on the old cluster is closed with it, so the client's next request reaches the new cluster.

The switch is held with the `pause` control until the new cluster serves, so the long requests reach the old
cluster shortly before the switch however long the new head takes to start."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx

from sandbox.testing import wait_until
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

MAX_DRAIN_S = 120
LONG_REQUEST_S = DELETION_DELAY_S + 5  # still running when the deletion delay after the switch ends
LONG_REQUESTS = 3


@dataclass(frozen=True)
class DrainRun:
    answered_after_switch_s: float
    gone_after_switch_s: float


def draining_rayservice(namespace: str, name: str, version: str, drain: bool = True) -> dict[str, Any]:
    manifest = rayservice(namespace, name, version)
    if drain:
        manifest["metadata"]["annotations"] = {MAX_DRAIN_ANNOTATION: str(MAX_DRAIN_S)}
    return manifest


def pending_serves(status: dict[str, Any]) -> bool:
    apps = (status.get("pendingServiceStatus") or {}).get("applicationStatuses") or {}
    return bool(apps) and all(app.get("status") == "RUNNING" for app in apps.values())


async def check_drained_deletion(stack: Stack, within: float, drain: bool = True) -> DrainRun:
    namespace, name = stack.namespace(), "drained"
    handle = await stack.start(draining_rayservice(namespace, name, "v1", drain))
    old = active_cluster(await wait_for_status(stack, handle, is_running, within=within, what="v1 Running"))
    spec = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
    assert spec is not None
    url = f"http://{spec.cluster_ip}:8000/"
    long = {"work_s": LONG_REQUEST_S}
    kept_alive = httpx.AsyncClient(timeout=MAX_DRAIN_S, trust_env=False)
    fresh = httpx.AsyncClient(timeout=MAX_DRAIN_S, trust_env=False)
    async with kept_alive, fresh:
        first = await kept_alive.get(url)  # its connection stays open on the old cluster
        assert first.json()["version"] == "v1"
        await handle.execute_update("apply", draining_rayservice(namespace, name, "v2", drain))
        await wait_for_status(stack, handle, pending_cluster, within=60, what="pending cluster chosen")
        await handle.execute_update("pause")
        await wait_for_status(stack, handle, pending_serves, within=within, what="new cluster serves")
        # Each on its own connection, while the Service still selects the old cluster.
        long_requests = [
            asyncio.create_task(fresh.get(url, params=long, headers={"Connection": "close"}))
            for _ in range(LONG_REQUESTS)
        ]
        await asyncio.sleep(0.5)
        await handle.execute_update("resume")
        await wait_for_status(
            stack,
            handle,
            lambda status: active_cluster(status) not in ("", old) and not pending_cluster(status),
            within=60,
            what="the new cluster promoted",
        )
        switched_at = time.monotonic()
        answers = await asyncio.gather(*long_requests, return_exceptions=True)
        answered_at = time.monotonic()
        assert all(isinstance(a, httpx.Response) and a.status_code == 200 for a in answers), answers
        assert {a.json()["version"] for a in answers if isinstance(a, httpx.Response)} == {"v1"}
        # They were still being answered when the deletion delay ended: the old cluster waited for them.
        assert answered_at - switched_at > DELETION_DELAY_S

        def old_gone() -> bool:
            return not stack.exists("rayclusters", namespace, old)

        await wait_until(old_gone, within=60, interval=0.2, what="old cluster deleted after its requests")
        gone_at = time.monotonic()
        # The idle kept-alive connection was closed with the old cluster; the next request opens a new one.
        after = await kept_alive.get(url)
        assert after.status_code == 200
        assert after.json()["version"] == "v2"
    await handle.execute_update("delete")
    return DrainRun(answered_at - switched_at, gone_at - switched_at)
