"""Drained deletion checked on a stack (simulated or real Ray): long requests sent to the old cluster right
before a blue-green switch are answered by it, and it is deleted only after them; an idle kept-alive
connection on the old cluster is closed with it, so the client's next request reaches the new cluster. Busy
clients send throughout, on kept-alive connections (pinned by the Service to the old cluster until its
proxies answer `Connection: close`) and on one connection per request: none of their requests fails.

The switch is held with the `pause` control until the new cluster serves, so the long requests reach the old
cluster shortly before the switch however long the new head takes to start. The incremental check sends its
long requests through the Gateway while the old cluster still has half of the traffic. The long requests are
held open (`hold_until`, sandbox/apps/holds.py) until the workflow has started the old cluster's drain, which
it does once the deletion delay after the switch has passed: they outlast the delay on a machine of any
speed, and are released then."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.upgrades import Incremental, incremental_rayservice, service_url
from raypilot.load import SteadyLoad
from sandbox.apps.holds import HOLD_PARAM
from sandbox.testing import wait_until
from tests.integration.rayservice_helpers import (
    DELETION_DELAY_S,
    active_cluster,
    head_alone,
    is_running,
    pending_cluster,
    promoted_away_from,
    rayservice,
    selected_cluster,
    serve_service_answering,
    wait_for_status,
)
from tests.integration.stack import Stack
from tests.workflows.timer_dues import acts_with_decision_times
from wire import names
from workflows.decisions.rayservice.drain import MAX_DRAIN_ANNOTATION

MAX_DRAIN_S = 120
LONG_REQUESTS = 3
# From the last answer to the old cluster's deletion: quiet readings a DRAIN_POLL apart, each a real Ray Serve
# call, ~20 s on an idle machine; a real head answers slowly on a loaded one (60 s was once not enough at load
# average 17).
DELETED_WITHIN_S = 150
# Answers of the per-connection clients counted once the old cluster is gone.
AFTER_DELETION_REQUESTS = 300


# A client that sends again 50 ms after each answer: busy enough to hold its connection all the time.
LOAD_PAUSE_S = 0.05
INCREMENTAL_PLAN = Incremental(step_percent=50, interval_s=5, surge_percent=50)


@dataclass(frozen=True)
class DrainRun:
    answered_after_switch_s: float
    gone_after_switch_s: float
    kept_alive_requests: int = 0
    per_connection_requests: int = 0


def busy_clients(url: str) -> tuple[SteadyLoad, SteadyLoad]:
    """Two clients on kept-alive connections, two opening a connection per request."""
    return (
        SteadyLoad(url, concurrency=2, keep_alive=True, pause_s=LOAD_PAUSE_S, timeout_s=MAX_DRAIN_S),
        SteadyLoad(url, concurrency=2, keep_alive=False, pause_s=LOAD_PAUSE_S, timeout_s=MAX_DRAIN_S),
    )


def drain_run(
    kept_alive: SteadyLoad, per_connection: SteadyLoad, switched_at: float, answered_at: float, gone_at: float
) -> DrainRun:
    """Checks that the busy clients sent and lost nothing; the run's times counted from the switch."""
    for load in (kept_alive, per_connection):
        failures = [f"{sample.detail} at {sample.at - switched_at:+.1f} s" for sample in load.failures[:5]]
        assert not load.failures, f"{len(load.failures)} of {len(load.samples)} failed: {failures}"
        assert load.samples, "the client sent nothing"
    return DrainRun(
        answered_at - switched_at, gone_at - switched_at, len(kept_alive.samples), len(per_connection.samples)
    )


def draining_rayservice(
    namespace: str, name: str, version: str, drain: bool = True, incremental: bool = False
) -> dict[str, Any]:
    if incremental:
        manifest = incremental_rayservice(namespace, name, version, INCREMENTAL_PLAN)
        manifest["spec"]["rayClusterDeletionDelaySeconds"] = DELETION_DELAY_S
        # Before the promotion the old cluster's target_capacity reaches 0 and Serve stops its replicas, each
        # after its requests or graceful_shutdown_timeout_s (20 s by default): held requests need longer.
        serve_config = yaml.safe_load(manifest["spec"]["serveConfigV2"])
        for application in serve_config["applications"]:
            for deployment in application["deployments"]:
                deployment["graceful_shutdown_timeout_s"] = MAX_DRAIN_S
        manifest["spec"]["serveConfigV2"] = yaml.safe_dump(serve_config)
    else:
        manifest = rayservice(namespace, name, version)
    if drain:
        manifest["metadata"]["annotations"] = {MAX_DRAIN_ANNOTATION: str(MAX_DRAIN_S)}
    return head_alone(manifest)


@asynccontextmanager
async def held_requests() -> AsyncIterator[tuple[dict[str, str], Path]]:
    """Query parameters that hold a request open until the yielded path is created."""
    with tempfile.TemporaryDirectory(prefix="raypilot-hold-") as directory:
        release = Path(directory) / "release"
        try:
            yield {HOLD_PARAM: str(release)}, release
        finally:
            release.touch()  # nothing stays held past the test


async def answered_after_drain_start(
    stack: Stack,
    handle: Any,
    namespace: str,
    old: str,
    long_requests: list[asyncio.Task[httpx.Response]],
    release: Path,
) -> list[httpx.Response]:
    """Waits until the workflow has told the old cluster's Serve proxies to close their connections (its
    drain started, so its deletion delay has passed); checks that its long requests are still open and it is
    still there (undrained, it is not deleted); then releases them and checks that each was answered 200:
    their answers."""

    async def drain_started() -> bool:
        acts = acts_with_decision_times(await handle.fetch_history(), names.CLOSE_SERVE_CONNECTIONS)
        return any(given["submission_id"] == f"raypilot-close-connections-{old}" for _, given in acts)

    await wait_until(drain_started, within=DELETED_WITHIN_S, interval=0.5, what=f"the drain of {old} started")
    early = [task.exception() or task.result() for task in long_requests if task.done()]
    assert not early, f"held requests answered before their release: {early}"
    assert stack.exists("rayclusters", namespace, old), "the old cluster went with requests open on it"
    await asyncio.to_thread(release.touch)
    answers = await asyncio.gather(*long_requests, return_exceptions=True)
    answered = [a for a in answers if isinstance(a, httpx.Response) and a.status_code == 200]
    assert len(answered) == len(answers), answers
    return answered


async def deleted_at(stack: Stack, namespace: str, old: str) -> float:
    """Waits until the old cluster is deleted (after its requests); time.monotonic() then."""

    def old_gone() -> bool:
        return not stack.exists("rayclusters", namespace, old)

    await wait_until(
        old_gone, within=DELETED_WITHIN_S, interval=0.2, what="old cluster deleted after its requests"
    )
    return time.monotonic()


def pending_serves(status: dict[str, Any]) -> bool:
    apps = (status.get("pendingServiceStatus") or {}).get("applicationStatuses") or {}
    return bool(apps) and all(app.get("status") == "RUNNING" for app in apps.values())


async def answered_through_the_api_server(stack: Stack, namespace: str, service: str) -> str:
    """The version the serve Service answers through the API server's Service proxy, as `kubectl proxy` users
    reach it (the serve Service's port is named `serve`, as KubeRay names it)."""
    proxied = await asyncio.to_thread(
        lambda: (
            stack.core.connect_get_namespaced_service_proxy(
                f"{service}:serve", namespace, _preload_content=False
            ).data
        )
    )
    return str(json.loads(proxied)["version"])


def check_selector_switch(per_connection: SteadyLoad, switched_at: float, gone_at: float) -> None:
    """A client opening a connection per request follows the Services' selector switch: v1 answers end
    around the switch (the sandbox's Service proxies learn the new selector within a moment), only v2 answers
    after it, and it kept being answered after the old cluster was deleted."""
    counts = per_connection.counts()
    assert counts["v1"] > 0, counts
    assert counts["v2"] > 0, counts
    last_v1 = max(sample.at for sample in per_connection.samples if sample.version == "v1")
    assert last_v1 < switched_at + 1.0, f"v1 answered {last_v1 - switched_at:+.2f} s from the switch"
    assert set(per_connection.counts(since=switched_at + 1.0)) == {"v2"}
    assert per_connection.counts(since=gone_at)["v2"] >= AFTER_DELETION_REQUESTS


async def check_drained_deletion(stack: Stack, within: float, drain: bool = True) -> DrainRun:
    """A blue-green upgrade v1 -> v2 under the busy clients, with long requests on the old cluster: at the
    switch both Services select the new cluster and the old one stays for its deletion delay, then its drain;
    the long requests are answered by it, it goes after them, and no request fails."""
    namespace, name = stack.namespace(), "drained"
    handle = await stack.start(draining_rayservice(namespace, name, "v1", drain))
    old = active_cluster(await wait_for_status(stack, handle, is_running, within=within, what="v1 Running"))
    spec = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
    assert spec is not None
    url = f"http://{spec.cluster_ip}:8000/"
    await serve_service_answering(url)
    assert await answered_through_the_api_server(stack, namespace, f"{name}-serve-svc") == "v1"
    kept_alive = httpx.AsyncClient(timeout=MAX_DRAIN_S, trust_env=False)
    fresh = httpx.AsyncClient(timeout=MAX_DRAIN_S, trust_env=False)
    busy_kept_alive, busy_per_connection = busy_clients(url)
    async with held_requests() as (long, release), kept_alive, fresh, busy_kept_alive, busy_per_connection:
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
        new = active_cluster(await promoted_away_from(stack, handle, old, within=60))
        switched_at = time.monotonic()
        # The Services were re-pointed before the status named the new cluster active; the old cluster is
        # kept for rayClusterDeletionDelaySeconds, then drained.
        assert selected_cluster(stack, namespace, f"{name}-serve-svc") == new
        assert selected_cluster(stack, namespace, f"{name}-head-svc") == new
        answers = await answered_after_drain_start(stack, handle, namespace, old, long_requests, release)
        answered_at = time.monotonic()
        assert {a.json()["version"] for a in answers} == {"v1"}
        gone_at = await deleted_at(stack, namespace, old)
        assert gone_at - switched_at >= DELETION_DELAY_S - 1
        # The idle kept-alive connection was closed with the old cluster; the next request opens a new one.
        after = await kept_alive.get(url)
        assert after.status_code == 200
        assert after.json()["version"] == "v2"
        answered_before = len(busy_per_connection.samples)
        await busy_per_connection.wait_for_requests(answered_before + AFTER_DELETION_REQUESTS)
        await busy_kept_alive.wait_for_requests(len(busy_kept_alive.samples) + 20)
    run = drain_run(busy_kept_alive, busy_per_connection, switched_at, answered_at, gone_at)
    check_selector_switch(busy_per_connection, switched_at, gone_at)
    await handle.execute_update("delete")
    return run


def old_share_between(status: dict[str, Any]) -> bool:
    """The old (active) cluster still takes some traffic, but no longer all of it."""
    share = (status.get("activeServiceStatus") or {}).get("trafficRoutedPercent")
    return share is not None and 0 < share < 100


async def check_incremental_drained_deletion(stack: Stack, within: float) -> DrainRun:
    """Through the Gateway: long requests sent while the old cluster has half of the traffic outlast the
    remaining step and the deletion delay; every one is answered, the old cluster goes after them, and the
    busy clients lose nothing."""
    namespace, name = stack.namespace(), "drained-inc"
    handle = await stack.start(draining_rayservice(namespace, name, "v1", incremental=True))
    old = active_cluster(await wait_for_status(stack, handle, is_running, within=within, what="v1 Running"))
    url = await service_url(stack, namespace, name, True)
    fresh = httpx.AsyncClient(timeout=MAX_DRAIN_S, trust_env=False)
    busy_kept_alive, busy_per_connection = busy_clients(url)
    async with held_requests() as (long, release), fresh, busy_kept_alive, busy_per_connection:
        await busy_kept_alive.wait_for_requests(10)
        await handle.execute_update("apply", draining_rayservice(namespace, name, "v2", incremental=True))
        await wait_for_status(stack, handle, old_share_between, within=within, what="old cluster at 50 %")
        long_requests = [
            asyncio.create_task(fresh.get(url, params=long, headers={"Connection": "close"}))
            for _ in range(2 * LONG_REQUESTS)
        ]
        await promoted_away_from(stack, handle, old, within=60)
        switched_at = time.monotonic()
        answers = await answered_after_drain_start(stack, handle, namespace, old, long_requests, release)
        answered_at = time.monotonic()
        versions = [a.json()["version"] for a in answers]
        assert "v1" in versions, versions  # some went to the old cluster, and were answered by it
        gone_at = await deleted_at(stack, namespace, old)
        await busy_kept_alive.wait_for_requests(len(busy_kept_alive.samples) + 20)
    run = drain_run(busy_kept_alive, busy_per_connection, switched_at, answered_at, gone_at)
    await handle.execute_update("delete")
    return run
