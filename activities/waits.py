"""Waits: each is ONE long-running activity that observes and returns only when what it watches differs from
what the workflow last saw (`last_view`), or when its target is reached. A workflow that waits this way adds
no history events while nothing changes, however long that takes.

Timeouts the workflow should give every wait: `heartbeat_timeout` about 3x the poll interval (Kubernetes
watches: 30 s is plenty, they heartbeat every heartbeat_timeout/3 from a background task), and
`start_to_close_timeout` = the wait's budget (e.g. the initializing timeout; hours for a job). The waits are
async, so a workflow's cancellation (a handler changed the desired state) ends them at once. Heartbeat
details carry the latest view (visible on the pending activity in the Web UI); a retried attempt starts from a
fresh read and still compares with the workflow's `last_view`, so a change seen by a lost attempt is
delivered by the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.dashboard import fetch_job_info, fetch_serve_details
from activities.dashboard_client import DashboardClient, head_serve_healthy
from activities.errors import KUBERNETES_GONE
from activities.gateway import route_ready
from activities.heartbeat import Heartbeater, quiet_heartbeat_interval
from activities.kubernetes.clusters import count_ready_serve_endpoints
from activities.kubernetes.resources import (
    ENDPOINT_SLICE,
    GATEWAY,
    HTTPROUTE,
    JOB,
    NAMESPACE,
    POD,
    RAYCLUSTER,
    Resource,
    trim_job,
    trim_object,
    trim_pod,
)
from activities.kubernetes.workloads import head_pod_selector, pick_head_pod
from models.naming import LABEL_CLUSTER
from wire import stubs
from wire.dashboard import HeadServeHealth, JobInfoAnswer, ServeObservation, WaitRayJob, WaitServe
from wire.kubernetes import (
    GatewayObservation,
    Observation,
    PodsObservation,
    WaitClusterPods,
    WaitGateway,
    WaitObject,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.stubs.common import implements
from wire.views import (
    cluster_pods_view,
    gateway_ready,
    gateway_view,
    job_view,
    pod_view,
    raycluster_head_ready,
    raycluster_ready,
    raycluster_view,
    serve_view,
)

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

WATCH_SECONDS: Final = 60

View = dict[str, Any]

SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"


class KubernetesWaits:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    async def _watch_until(
        self,
        resource: Resource,
        namespace: str,
        params: Mapping[str, str],
        pick: Callable[[Iterable[dict[str, Any]]], dict[str, Any] | None],
        view_of: Callable[[dict[str, Any] | None], View],
        done: Callable[[View], bool],
    ) -> tuple[dict[str, Any] | None, View]:
        """List, then watch from the list's resourceVersion, keeping the selected objects, until
        `done(view_of(pick(objects)))`. A 410 Gone (history compacted) lists again."""
        api = self.dependencies.apiserver()
        path = resource.path(namespace)
        what = f"watch {resource.describe(namespace)} ({', '.join(f'{k}={v}' for k, v in params.items())})"
        async with Heartbeater() as heartbeater:
            while True:
                listing = await api.get_json(path, what, params) or {}
                objects = {item["metadata"]["name"]: item for item in listing.get("items") or []}
                version = str((listing.get("metadata") or {}).get("resourceVersion") or "")
                current = pick(objects.values())
                view = view_of(current)
                heartbeater.details = {"view": view, "resourceVersion": version}
                if done(view):
                    return current, view
                try:
                    # Closed on the way out: a wait that returns mid-watch ends its request then, not
                    # whenever the generator is collected.
                    watched = api.watch_from(path, params, version, WATCH_SECONDS, what)
                    async with contextlib.aclosing(watched):
                        async for event in watched:
                            obj = event.get("object") or {}
                            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                            if event.get("type") == "BOOKMARK":
                                continue
                            obj.setdefault("apiVersion", resource.api_version)
                            obj.setdefault("kind", resource.kind)
                            if event.get("type") == "DELETED":
                                objects.pop(obj["metadata"]["name"], None)
                            else:
                                objects[obj["metadata"]["name"]] = obj
                            current = pick(objects.values())
                            view = view_of(current)
                            heartbeater.details = {"view": view, "resourceVersion": version}
                            if done(view):
                                return current, view
                except ApplicationError as exc:
                    if exc.type != KUBERNETES_GONE:
                        raise
                    activity.logger.info("watch expired (%s); listing again", exc.message)

    async def _watch_named(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        view_of: Callable[[dict[str, Any] | None], View],
        done: Callable[[View], bool],
    ) -> tuple[dict[str, Any] | None, View]:
        """`_watch_until` of the one object of `resource` called `name` (None while it does not exist)."""
        return await self._watch_until(
            resource,
            namespace,
            {"fieldSelector": f"metadata.name={name}"},
            lambda items: next(iter(items), None),
            view_of,
            done,
        )

    @implements(stubs.wait_raycluster)
    async def wait_raycluster(self, request: WaitRayCluster) -> Observation:
        """Until the RayCluster's view differs from `last_view` ("change": appearing and disappearing are
        changes too), or it is ready ("ready": status.state ready; "head_ready": HeadPodReady) or gone.
        Returns the cluster's metadata and status (no spec). Heartbeat timeout ~30 s; start_to_close = the
        budget."""
        goals: dict[str, Callable[[View], bool]] = {
            "change": lambda view: view != request.last_view,
            "ready": raycluster_ready,
            "head_ready": raycluster_head_ready,
        }
        goal = goals[request.until]

        def done(view: View) -> bool:
            if request.until == "change":
                return goal(view)
            return not view["exists"] or goal(view)

        current, view = await self._watch_named(
            RAYCLUSTER, request.namespace, request.name, raycluster_view, done
        )
        # Metadata and status only: the workflow knows the spec it asked for, and a long-lived workflow
        # would otherwise copy the whole spec into its history at every change.
        return Observation(trim_object(current, spec=False) if current is not None else None, view)

    @implements(stubs.wait_submitter_job)
    async def wait_submitter_job(self, request: WaitObject) -> Observation:
        """Until the submitter Job's conditions (Complete/Failed/...) or existence differ from `last_view`.
        Heartbeat timeout ~30 s; start_to_close = the job's budget."""
        current, view = await self._watch_named(
            JOB, request.namespace, request.name, job_view, lambda view: view != request.last_view
        )
        return Observation(trim_job(current) if current is not None else None, view)

    @implements(stubs.wait_ready_endpoints)
    async def wait_ready_endpoints(self, request: WaitReadyEndpoints) -> dict[str, int]:
        """Until the ready endpoints (numServeEndpoints) of any of the Services differ from `last_counts`;
        watches their EndpointSlices. Heartbeat timeout ~30 s."""
        services = sorted(request.service_names)
        selector = f"kubernetes.io/service-name in ({','.join(services)})"

        def all_slices(items: Iterable[dict[str, Any]]) -> dict[str, Any]:
            return {"items": list(items)}

        def counts(current: dict[str, Any] | None) -> dict[str, int]:
            slices = (current or {}).get("items") or []
            return {
                name: count_ready_serve_endpoints(
                    [s for s in slices if (s["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == name]
                )
                for name in services
            }

        _, view = await self._watch_until(
            ENDPOINT_SLICE,
            request.namespace,
            {"labelSelector": selector},
            all_slices,
            counts,
            lambda view: view != request.last_counts,
        )
        return view

    @implements(stubs.wait_head_pod)
    async def wait_head_pod(self, request: WaitObject) -> Observation:
        """Until the head Pod of RayCluster `request.name` changes: another Pod, phase, IP, readiness, a
        container's state or restart count (SidecarMode submitter, Ray container health). Heartbeat
        timeout ~30 s."""
        current, view = await self._watch_until(
            POD,
            request.namespace,
            {"labelSelector": head_pod_selector(request.name)},
            pick_head_pod,
            pod_view,
            lambda view: view != request.last_view,
        )
        return Observation(trim_pod(current) if current is not None else None, view)

    @implements(stubs.wait_cluster_pods)
    async def wait_cluster_pods(self, request: WaitClusterPods) -> PodsObservation:
        """Until the Pods of RayCluster `request.cluster_name` differ from `last_view`: a Pod deleted, gone,
        created, Running or Ready (a roll of its Pods, raypilot.io/in-place-restart). Watches them; heartbeat
        timeout ~30 s."""
        current, view = await self._watch_until(
            POD,
            request.namespace,
            {"labelSelector": f"{LABEL_CLUSTER}={request.cluster_name}"},
            lambda items: {"items": list(items)},
            lambda pods: cluster_pods_view((pods or {}).get("items") or []),
            lambda view: view != request.last_view,
        )
        return PodsObservation([trim_pod(pod) for pod in (current or {}).get("items") or []], view)


class DashboardWaits:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @implements(stubs.wait_job)
    async def wait_job(self, request: WaitRayJob) -> JobInfoAnswer:
        """Poll GET /api/jobs/<id> every `poll_seconds` (heartbeating each poll) until the answer's (outcome,
        status, message) differs from `request.last` or the job is terminal. Heartbeat timeout ~3x
        poll_seconds; start_to_close = the job's budget (e.g. activeDeadlineSeconds)."""
        client = await DashboardClient.open(self.dependencies, request.target)
        last_key = request.last.key() if request.last is not None else None
        polls = 0
        async with Heartbeater() as beat:
            while True:
                answer = await fetch_job_info(client, request.submission_id)
                polls += 1
                beat.details = {"observed": list(answer.key()), "polls": polls}
                activity.heartbeat(beat.details)
                if answer.key() != last_key or answer.terminal:
                    return answer
                await asyncio.sleep(request.poll_seconds)

    async def _observe_serve(self, client: DashboardClient, request: WaitServe) -> ServeObservation:
        details: dict[str, Any] | None = None
        error = ""
        try:
            details = await fetch_serve_details(client)
        except ApplicationError as exc:
            error = exc.message
        head_pod: dict[str, Any] | None = None
        healthy: bool | None = None
        if request.check_head:
            api = self.dependencies.apiserver()
            listing = await api.get_json(
                POD.path(request.target.namespace),
                f"list head pods of RayCluster {request.cluster_name!r}",
                {"labelSelector": head_pod_selector(request.cluster_name)},
            )
            head = pick_head_pod((listing or {}).get("items") or [])
            head_pod = trim_pod(head) if head is not None else None
            pod_ip = ((head_pod or {}).get("status") or {}).get("podIP")
            healthy = False
            if head_pod is not None and pod_ip:
                healthy = await head_serve_healthy(
                    self.dependencies,
                    HeadServeHealth(
                        request.target.namespace, head_pod["metadata"]["name"], pod_ip, request.serve_port
                    ),
                )
        view = serve_view(details, head_pod, healthy, request.check_head)
        return ServeObservation(details, error, head_pod, healthy, view)

    @implements(stubs.wait_serve)
    async def wait_serve(self, request: WaitServe) -> ServeObservation:
        """Poll Serve (and the head Pod and its /-/healthz) every `poll_seconds` until the view differs from
        `last_view`, heartbeating (the latest view) every third of the heartbeat timeout from a background
        task, not at each poll: a minute for the 3 min of IO.QUIET_WATCH (10 s for the 30 s of the runs
        started before it). start_to_close: hours (the RayService workflow waits again after each change)."""
        client = await DashboardClient.open(self.dependencies, request.target)
        async with Heartbeater(interval=quiet_heartbeat_interval) as beat:
            polls = 0
            while True:
                observation = await self._observe_serve(client, request)
                polls += 1
                beat.details = {"view": observation.view}
                if polls == 1:
                    activity.heartbeat(beat.details)  # the first view at once, then one per interval
                if observation.view != request.last_view:
                    return observation
                await asyncio.sleep(request.poll_seconds)

    @implements(stubs.wait_gateway)
    async def wait_gateway(self, request: WaitGateway) -> GatewayObservation:
        """Poll the Gateway (and the HTTPRoute) every `poll_seconds` until both are ready ("ready": Gateway
        Accepted+Programmed, the route's parent status for it Accepted+ResolvedRefs) or their statuses
        differ from `last_view` ("change"). Heartbeat timeout ~3x poll_seconds."""
        api = self.dependencies.apiserver()
        gateway_ns = request.gateway_namespace or request.namespace
        route_ns = request.route_namespace or request.namespace
        async with Heartbeater() as beat:
            while True:
                gateway = await api.get_json(
                    GATEWAY.path(gateway_ns, request.gateway_name), f"get gateway {request.gateway_name!r}"
                )
                route = None
                if request.route_name:
                    route = await api.get_json(
                        HTTPROUTE.path(route_ns, request.route_name), f"get httproute {request.route_name!r}"
                    )
                labels = None
                if request.namespace_labels_of:
                    found = await api.get_json(
                        NAMESPACE.path(None, request.namespace_labels_of),
                        f"get namespace {request.namespace_labels_of!r}",
                    )
                    labels = dict((found or {}).get("metadata", {}).get("labels") or {}) if found else None
                ready = gateway_ready(gateway) and (
                    request.route_name is None
                    or route_ready(route, request.gateway_name, gateway_ns, route_ns)
                )
                view = gateway_view(gateway, route, ready)
                if request.with_specs:
                    view["generations"] = [_generation(gateway), _generation(route)]
                if request.namespace_labels_of:
                    view["namespace_labels"] = labels
                beat.details = {"view": view}
                activity.heartbeat(beat.details)
                if (request.until == "ready" and ready) or (
                    request.until == "change" and view != request.last_view
                ):
                    return GatewayObservation(
                        trim_object(gateway) if gateway is not None else None,
                        trim_object(route) if route is not None else None,
                        ready,
                        view,
                        labels,
                    )
                await asyncio.sleep(request.poll_seconds)


def _generation(obj: Mapping[str, Any] | None) -> int | None:
    return ((obj or {}).get("metadata") or {}).get("generation")
