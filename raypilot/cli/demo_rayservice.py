"""Demo step 2: a RayService v1 through RayServiceWorkflow, then v2 as a NewClusterWithIncrementalUpgrade
while a steady load goes through the Gateway; a live line per change, the upgrade's steps, a timeline PNG."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client as k8s
from temporalio.client import WorkflowHandle

from models.naming import gateway_name
from raypilot.cli.demo_support import (
    POLL_INTERVAL_S,
    ChangePrinter,
    DemoContext,
    DemoFailed,
    DemoPace,
    example_manifest,
    query_status,
    read_custom,
    start_workflow,
)
from raypilot.cli.demo_view import RECENT_S, UpgradeReport, service_line
from raypilot.cli.render import PhaseMark, advance_timeline, render_status, status_phase
from raypilot.cli.timeline import share_series, write_timeline_png
from raypilot.cli.timeline_command import handle_events
from raypilot.cli.timeline_history import (
    cluster_points,
    last_update,
    rebased,
    steps_of,
    timeline_from_history,
)
from raypilot.load import SteadyLoad

SERVICE_NAME = "demo-service"
OLD_VERSION, NEW_VERSION = "v1", "v2"
# Two clients without pause keep a steady stream without starving the new cluster's head of CPU on a small
# machine (with four, a real head took over 4 minutes to start on 2 busy cores).
LOAD_CONCURRENCY = 2
BASELINE_REQUESTS = 20  # answers from v1 through the Gateway before the upgrade starts
SETTLE_S = 2.0  # load kept after the upgrade, so the picture shows v2 answering alone
HEARTBEAT_S = 5.0  # a live line at least this often, so the request counts move on screen
DEPLOY_PATIENCE_S = 600.0  # a real head took 1-3 minutes with other Ray work on the same 2 cores
UPGRADE_PATIENCE_S = 600.0
GATEWAY_LISTENING = re.compile(r"listening on ([0-9.]+):(\d+)")


def demo_service_manifest(namespace: str, version: str, pace: DemoPace) -> dict[str, Any]:
    """examples/rayservice-incremental.yaml answering `version` (the head's APP_VERSION), with the demo's
    step size, interval and surge."""
    manifest = example_manifest("rayservice-incremental.yaml", SERVICE_NAME, namespace)
    spec = manifest["spec"]
    spec["upgradeStrategy"]["clusterUpgradeOptions"].update(
        {
            "maxSurgePercent": pace.max_surge_percent,
            "stepSizePercent": pace.step_size_percent,
            "intervalSeconds": pace.interval_s,
        }
    )
    head = spec["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["env"] = [entry for entry in head.get("env", []) if entry.get("name") != "APP_VERSION"]
    head["env"].append({"name": "APP_VERSION", "value": version})
    return manifest


def gateway_url(gateway: dict[str, Any] | None) -> str | None:
    """http://address:port/ of a programmed Gateway (the sandbox names the port it bound in the Programmed
    condition's message; a privileged process gets the listener's own port)."""
    if gateway is None:
        return None
    status = gateway.get("status") or {}
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Programmed" and condition.get("status") == "True":
            found = GATEWAY_LISTENING.search(str(condition.get("message") or ""))
            if found:
                return f"http://{found.group(1)}:{found.group(2)}/"
            addresses = status.get("addresses") or []
            listeners = (gateway.get("spec") or {}).get("listeners") or []
            if addresses and listeners:
                return f"http://{addresses[0]['value']}:{listeners[0]['port']}/"
    return None


def _active_cluster(status: dict[str, Any]) -> str:
    return str((status.get("activeServiceStatus") or {}).get("rayClusterName") or "")


def _pending_cluster(status: dict[str, Any]) -> str:
    return str((status.get("pendingServiceStatus") or {}).get("rayClusterName") or "")


def _migrated_time(status: dict[str, Any]) -> datetime | None:
    """The pending side's lastTrafficMigratedTime: set when the new cluster joins the route, then at each
    traffic step (the active side is stamped at the same moments)."""
    value = (status.get("pendingServiceStatus") or {}).get("lastTrafficMigratedTime")
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


async def _deploy_first_version(
    handle: WorkflowHandle[Any, Any], show: Callable[[dict[str, Any]], None]
) -> dict[str, Any]:
    deadline = time.monotonic() + DEPLOY_PATIENCE_S
    while time.monotonic() < deadline:
        status = await query_status(handle)
        show(status)
        if status.get("serviceStatus") == "Running" and _active_cluster(status):
            return status
        await asyncio.sleep(POLL_INTERVAL_S)
    raise DemoFailed(f"RayService {SERVICE_NAME} was not Running within {DEPLOY_PATIENCE_S:.0f} s")


async def _answers_through(url: str, version: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as http:
            response = await http.get(url)
        return response.status_code == 200 and response.json().get("version") == version
    except (httpx.HTTPError, ValueError, AttributeError):
        return False


async def _wait_for_gateway(custom: k8s.CustomObjectsApi, namespace: str) -> str:
    """The Gateway's URL once the first version answers through it: Running counts serve endpoints, and the
    Gateway listens before its HTTPRoute is attached, so early requests would meet a 404."""
    deadline = time.monotonic() + DEPLOY_PATIENCE_S
    while time.monotonic() < deadline:
        gateway = await read_custom(
            custom, "gateway.networking.k8s.io", "gateways", namespace, gateway_name(SERVICE_NAME)
        )
        url = gateway_url(gateway)
        if url is not None and await _answers_through(url, OLD_VERSION):
            return url
        await asyncio.sleep(POLL_INTERVAL_S)
    raise DemoFailed(
        f"{OLD_VERSION} did not answer through Gateway {gateway_name(SERVICE_NAME)} within"
        f" {DEPLOY_PATIENCE_S:.0f} s"
    )


@dataclass(frozen=True)
class Deployed:
    """The first version, Running and answering through the Gateway at `url`."""

    context: DemoContext
    handle: WorkflowHandle[Any, Any]
    url: str


async def deploy_first_version(context: DemoContext) -> Deployed:
    """Starts the RayService workflow with v1 and waits until it is Running and its Gateway has an address."""
    emit = context.emit
    manifest = demo_service_manifest(context.namespace, OLD_VERSION, context.pace)
    handle = await start_workflow(context.client, context.task_queue, manifest)
    emit(f"  workflow {handle.id} started ({OLD_VERSION})")
    began = time.monotonic()
    printer = ChangePrinter(emit)
    await _deploy_first_version(
        handle,
        lambda status: printer.show(
            f"{status.get('serviceStatus')} {_active_cluster(status)} {_pending_cluster(status)}",
            f"  {time.monotonic() - began:6.1f} s  serviceStatus {status.get('serviceStatus') or '-'}"
            f"  active {_active_cluster(status) or '-'}  pending {_pending_cluster(status) or '-'}",
        ),
    )
    url = await _wait_for_gateway(context.custom, context.namespace)
    emit(f"  {time.monotonic() - began:6.1f} s  {OLD_VERSION} answers through the Gateway at {url}")
    return Deployed(context, handle, url)


async def upgrade_under_load(deployed: Deployed, workdir: Path) -> UpgradeReport:
    """Sends a steady load through the Gateway, applies v2 once v1 answered, follows the upgrade to its
    end."""
    emit = deployed.context.emit
    load_began = time.monotonic()
    async with SteadyLoad(deployed.url, concurrency=LOAD_CONCURRENCY) as load:
        await asyncio.wait_for(load.wait_for_requests(BASELINE_REQUESTS), 60)
        emit(f"  load: {LOAD_CONCURRENCY} clients; answers so far {dict(load.counts())}")
        return await _upgrade_under_load(deployed, load, load_began, emit, workdir)


async def _upgrade_under_load(
    deployed: Deployed,
    load: SteadyLoad,
    load_began: float,
    emit: Callable[[str], None],
    workdir: Path,
) -> UpgradeReport:
    handle, pace = deployed.handle, deployed.context.pace
    old_cluster = _active_cluster(await query_status(handle))
    applied_at = time.monotonic()
    manifest = demo_service_manifest(deployed.context.namespace, NEW_VERSION, pace)
    result = await handle.execute_update("apply", manifest)
    emit(f"  {NEW_VERSION} applied (generation {result.get('generation')}); {pace.upgrade_text()}")
    phases: tuple[PhaseMark, ...] = ()  # for the `raypilot status` view at the end
    migrated: list[datetime] = []
    new_cluster = ""
    total_s: float | None = None
    printer = ChangePrinter(emit)
    while time.monotonic() - applied_at < UPGRADE_PATIENCE_S:
        status = await query_status(handle)
        elapsed = time.monotonic() - applied_at
        phases = advance_timeline(phases, status_phase("RayService", status), datetime.now(UTC))
        migrated_at = _migrated_time(status)
        if migrated_at is not None and migrated_at not in migrated:
            migrated.append(migrated_at)
        if not new_cluster and _pending_cluster(status) not in ("", old_cluster):
            new_cluster = _pending_cluster(status)
        now = time.monotonic()
        counts, recent = load.counts(load_began), load.counts(now - RECENT_S)
        key = service_line(0.0, status, Counter(), Counter(), NEW_VERSION) + str(int(elapsed // HEARTBEAT_S))
        printer.show(key, service_line(elapsed, status, counts, recent, NEW_VERSION))
        if new_cluster and _active_cluster(status) == new_cluster and not _pending_cluster(status):
            total_s = elapsed
            emit(f"  {elapsed:6.1f} s  {NEW_VERSION} cluster {new_cluster} active with all traffic")
            break
        await asyncio.sleep(POLL_INTERVAL_S)
    await asyncio.sleep(SETTLE_S)
    load_ended = time.monotonic()
    final = await query_status(handle)
    await load.stop()
    view = render_status("RayService", final, ref=handle.id, now=datetime.now(UTC), timeline=phases)
    for line in view.splitlines():
        emit(f"  | {line}")
    labels = {old_cluster: f"{OLD_VERSION} ({old_cluster})"}
    if new_cluster:
        labels[new_cluster] = f"{NEW_VERSION} ({new_cluster})"
    # The same reading of the history as `raypilot timeline`, as seconds since the upgrade's `apply`.
    timeline = timeline_from_history(await handle_events(handle), SERVICE_NAME)
    origin = last_update(timeline, "apply") or 0.0
    series = rebased(cluster_points(timeline, origin + load_ended - applied_at), origin)
    series = {cluster: points for cluster, points in series.items() if cluster in labels}
    steps = [step for step in steps_of(series) if step.at > 0]
    serving = [(steps[0].at, f"{NEW_VERSION} cluster serving")] if steps else []
    png = write_timeline_png(
        workdir / "upgrade-timeline.png",
        {labels[cluster]: points for cluster, points in series.items()},
        share_series(load.samples, NEW_VERSION, applied_at, load_ended),
        f"RayService {SERVICE_NAME}: {OLD_VERSION} -> {NEW_VERSION}, NewClusterWithIncrementalUpgrade",
        f"observed {NEW_VERSION} share of answers (1 s windows)",
        serving,
    )
    return UpgradeReport(
        old_cluster=old_cluster,
        new_cluster=new_cluster,
        old_version=OLD_VERSION,
        new_version=NEW_VERSION,
        counts=load.counts(load_began),
        failure_details=Counter(sample.detail for sample in load.failures),
        steps=steps,
        migrated_times=sorted(migrated),
        total_s=total_s,
        strategy=f"NewClusterWithIncrementalUpgrade: {pace.upgrade_text()}",
        timeline_png=png,
    )
