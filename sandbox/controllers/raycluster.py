"""The sandbox's RayCluster controller: plays KubeRay's operator and the kubelet for Ray pods.

For each RayCluster: one head pod whose Ray (a RealRayHead or a SimulatedDashboard, from `head_factory`) is
reachable at podIP:containerPort; worker pods recorded as Running (no Ray process; their Serve port forwards
to the head's); the head Service `<cluster>-head-svc` (with a clusterIP, see raycluster_pods.head_service);
the status KubeRay writes. Unhealthy pods are deleted and recreated per `should_delete_pod`. Deleting the
RayCluster, its head pod or suspending it stops the Ray processes by PID.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.controllers.pod_health import should_delete_pod
from sandbox.controllers.raycluster_env import EnvResolutionError, container_environment
from sandbox.controllers.raycluster_head import HeadFactory, HeadRuntime, WorkerEndpoint, stop_all
from sandbox.controllers.raycluster_kubelet import (
    mark_ray_container_terminated,
    running_worker_status,
    set_running,
    update_pod_status,
)
from sandbox.controllers.raycluster_owned import ensure_auth_secret, ensure_head_service, write_cluster_status
from sandbox.controllers.raycluster_pods import (
    CLUSTER_LABEL,
    DISABLE_PROVISIONED_HEAD_RESTART,
    GROUP_LABEL,
    desired_worker_pods,
    head_container_ports,
    head_pod,
    runtime_port_key,
    worker_pod,
)
from sandbox.controllers.raycluster_podstatus import container_waiting_status
from sandbox.controllers.raycluster_status import PROVISIONED, condition_is_true, node_type
from sandbox.controllers.raycluster_workqueue import FORGET, KeyedWorkQueue, ReconcileResult, follow_changes
from sandbox.netalloc import AddressPool
from sandbox.store import ApiError, Store, WatchEvent

log = logging.getLogger(__name__)

ClusterKey = tuple[str, str]
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _suffix() -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))


@dataclass
class _ClusterState:
    uid: str
    head: HeadRuntime | None = None
    workers: dict[str, WorkerEndpoint] = field(default_factory=dict)
    pod_ips: dict[str, str] = field(default_factory=dict)


class RayClusterController:
    def __init__(
        self,
        store: Store,
        head_factory: HeadFactory,
        *,
        pod_ips: AddressPool | None = None,
        requeue_s: float = 0.3,
        head_retry_s: float = 2.0,
        liveness_interval_s: float = 1.0,
        on_processes_changed: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.head_factory = head_factory
        self.pod_ips = pod_ips or store.pools.pods
        self.requeue_s = requeue_s
        self.head_retry_s = head_retry_s
        self.liveness_interval_s = liveness_interval_s
        self._on_processes_changed = on_processes_changed or (lambda: None)
        self._queue: KeyedWorkQueue[ClusterKey] = KeyedWorkQueue("raycluster", self._reconcile)
        self._states: dict[ClusterKey, _ClusterState] = {}
        self._watches: list[asyncio.Task[None]] = []

    # ---- lifecycle ----------------------------------------------------------------------------------------
    async def start(self) -> None:
        self._watches = [
            asyncio.create_task(
                follow_changes(self.store, "ray.io/v1", "RayCluster", self._on_cluster_event)
            ),
            asyncio.create_task(
                follow_changes(self.store, "v1", "Pod", self._on_owned_event, label_selector=CLUSTER_LABEL)
            ),
            asyncio.create_task(
                follow_changes(
                    self.store, "v1", "Service", self._on_owned_event, label_selector=CLUSTER_LABEL
                )
            ),
        ]

    async def stop(self) -> None:
        for task in self._watches:
            task.cancel()
        await asyncio.gather(*self._watches, return_exceptions=True)
        await self._queue.stop()
        await asyncio.gather(*(self._teardown(key) for key in list(self._states)))

    @property
    def pids(self) -> list[int]:
        return [pid for state in self._states.values() if state.head is not None for pid in state.head.pids]

    def head_runtime(self, namespace: str, name: str) -> HeadRuntime | None:
        state = self._states.get((namespace, name))
        return state.head if state is not None else None

    def _on_cluster_event(self, event: WatchEvent) -> None:
        meta = event.object["metadata"]
        self._queue.enqueue((meta.get("namespace", "default"), meta["name"]))

    def _on_owned_event(self, event: WatchEvent) -> None:
        meta = event.object["metadata"]
        cluster = (meta.get("labels") or {}).get(CLUSTER_LABEL)
        if cluster:
            self._queue.enqueue((meta.get("namespace", "default"), cluster))

    # ---- fault hooks -------------------------------------------------------------------------------------
    async def stop_dashboard(self, namespace: str, name: str) -> None:
        """The head's Ray container dies: processes stopped, container terminated; then pod health decides."""
        runtime = self._require_head(namespace, name)
        if runtime.running:
            await runtime.crash()
            self._on_processes_changed()
            self._mark_head_terminated(namespace, runtime, "stopped by fault injection")
        self._queue.enqueue((namespace, name))

    async def start_dashboard(self, namespace: str, name: str) -> None:
        """The kubelet restarts the head's Ray container in place (same pod, restartCount + 1)."""
        runtime = self._require_head(namespace, name)
        if not runtime.running:
            await runtime.recover()
            self._on_processes_changed()
            pod = self.store.try_get("v1", "Pod", namespace, runtime.pod_name)
            if pod is not None:
                set_running(self.store, pod, runtime.pod_ip, restarts=runtime.restarts)
        self._queue.enqueue((namespace, name))

    def _require_head(self, namespace: str, name: str) -> HeadRuntime:
        runtime = self.head_runtime(namespace, name)
        if runtime is None:
            raise LookupError(f"RayCluster {namespace}/{name} has no running head in this sandbox")
        return runtime

    # ---- reconcile ----------------------------------------------------------------------------------------
    async def _reconcile(self, key: ClusterKey) -> ReconcileResult:
        namespace, name = key
        cluster = self.store.try_get("ray.io/v1", "RayCluster", namespace, name)
        state = self._states.get(key)
        if state is not None and (cluster is None or cluster["metadata"]["uid"] != state.uid):
            await self._teardown(key)
        if cluster is None:
            return FORGET
        if cluster["metadata"].get("deletionTimestamp"):
            await self._teardown(key)
            return None
        state = self._states.setdefault(key, _ClusterState(cluster["metadata"]["uid"]))
        await self._forget_vanished_pods(state, self._pods(cluster))
        # As KubeRay: the token Secret and the head Service exist before any pod.
        ensure_auth_secret(self.store, cluster)
        service = ensure_head_service(self.store, cluster)
        requeue: float | None = None
        if (cluster.get("spec") or {}).get("suspend"):
            for pod in self._pods(cluster):
                self._delete_pod(namespace, pod["metadata"]["name"])
            await self._forget_vanished_pods(state, [])
        else:
            requeue = await self._reconcile_head(cluster, state)
            cluster = self.store.try_get("ray.io/v1", "RayCluster", namespace, name)
            if cluster is None or cluster["metadata"]["uid"] != state.uid:
                return 0.0
            if requeue is None:
                requeue = await self._reconcile_workers(cluster, state)
        write_cluster_status(self.store, cluster, self._pods, service)
        if state.head is not None and state.head.has_processes:
            requeue = (
                min(requeue, self.liveness_interval_s) if requeue is not None else self.liveness_interval_s
            )
        return requeue

    def _pods(self, cluster: Mapping[str, Any]) -> list[dict[str, Any]]:
        meta = cluster["metadata"]
        pods = self.store.list(
            "v1", "Pod", meta.get("namespace"), label_selector=f"{CLUSTER_LABEL}={meta['name']}"
        )
        return [
            pod
            for pod in pods
            if any(ref.get("uid") == meta["uid"] for ref in pod["metadata"].get("ownerReferences") or [])
            and not pod["metadata"].get("deletionTimestamp")
        ]

    def _delete_pod(self, namespace: str, name: str) -> None:
        try:
            self.store.delete("v1", "Pod", namespace, name)
        except ApiError as exc:
            if exc.status != 404:
                raise

    async def _forget_vanished_pods(self, state: _ClusterState, pods: list[dict[str, Any]]) -> None:
        """Stop what ran for pods that are gone and give their addresses back."""
        present = {pod["metadata"]["name"] for pod in pods}
        stopping: list[HeadRuntime | WorkerEndpoint] = []
        if state.head is not None and state.head.pod_name not in present:
            log.info("head pod %s is gone: its Ray head stops (its jobs with it)", state.head.pod_name)
            stopping.append(state.head)
            state.head = None
        for pod_name in [n for n in state.workers if n not in present]:
            stopping.append(state.workers.pop(pod_name))
        if stopping:
            await stop_all(stopping)
            self._on_processes_changed()
        for pod_name in [n for n in state.pod_ips if n not in present]:
            self.pod_ips.release(state.pod_ips.pop(pod_name))

    async def _teardown(self, key: ClusterKey) -> None:
        state = self._states.pop(key, None)
        if state is not None:
            await self._forget_vanished_pods(state, [])

    # ---- head --------------------------------------------------------------------------------------------
    async def _reconcile_head(self, cluster: dict[str, Any], state: _ClusterState) -> float | None:
        namespace = cluster["metadata"].get("namespace", "default")
        heads = [pod for pod in self._pods(cluster) if node_type(pod) == "head"]
        unhealthy = [pod for pod in heads if should_delete_pod(pod)[0]]
        for pod in unhealthy:
            log.info("%s", should_delete_pod(pod)[1])
            self._delete_pod(namespace, pod["metadata"]["name"])
        if unhealthy:
            await self._forget_vanished_pods(state, [p for p in self._pods(cluster)])
            return self.requeue_s  # KubeRay recreates the head on the next pass, not in this one
        for extra in heads[1:]:
            self._delete_pod(namespace, extra["metadata"]["name"])
        if not heads:
            annotations = cluster["metadata"].get("annotations") or {}
            if condition_is_true(cluster.get("status") or {}, PROVISIONED) and (
                annotations.get(DISABLE_PROVISIONED_HEAD_RESTART) == "true"
            ):
                return None
            heads = [self.store.create("v1", "Pod", head_pod(cluster, _suffix()))]
        pod = heads[0]
        runtime = state.head
        if runtime is not None and runtime.pod_name == pod["metadata"]["name"]:
            if runtime.died_unexpectedly():
                runtime.running = False
                self._on_processes_changed()
                self._mark_head_terminated(namespace, runtime, "the Ray head processes exited")
                return self.head_retry_s
            if (
                not runtime.running
                and not runtime.stopped_by_fault
                and pod["spec"].get("restartPolicy") != "Never"
            ):
                return await self._restart_in_place(pod, runtime)
            return None
        if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
            return await self._start_head(cluster, state, pod)
        # A Running head pod without Ray behind it (its runtime was lost): report the container as terminated.
        log.info(
            "head pod %s runs no Ray head here: its container is reported terminated", pod["metadata"]["name"]
        )
        mark_ray_container_terminated(
            self.store, pod, 137, "Error", "the Ray head is not running in this sandbox"
        )
        return self.requeue_s

    async def _start_head(
        self, cluster: dict[str, Any], state: _ClusterState, pod: dict[str, Any]
    ) -> float | None:
        meta, pod_name = pod["metadata"], pod["metadata"]["name"]
        namespace = meta.get("namespace", "default")
        pod_ip = state.pod_ips.get(pod_name) or self.pod_ips.allocate()
        state.pod_ips[pod_name] = pod_ip
        container = pod["spec"]["containers"][0]
        pod = update_pod_status(
            self.store,
            pod,
            phase="Pending",
            podIP=pod_ip,
            podIPs=[{"ip": pod_ip}],
            containerStatuses=[container_waiting_status(container["name"], "", "ContainerCreating")],
        )
        try:
            env = container_environment(self.store, pod, container)
        except EnvResolutionError as exc:
            waiting = container_waiting_status(container["name"], str(exc))
            update_pod_status(self.store, pod, containerStatuses=[waiting])
            return self.head_retry_s
        head_group = (cluster.get("spec") or {}).get("headGroupSpec") or {}
        params = {str(k): _param_text(v) for k, v in (head_group.get("rayStartParams") or {}).items()}
        head = self.head_factory(f"{namespace}-{pod_name}", env, params, pod_ip)
        runtime = HeadRuntime(pod_name, pod_ip, head, head_container_ports(cluster))
        try:
            await runtime.start()
        except Exception as exc:
            log.warning("head %s/%s failed to start: %s", namespace, pod_name, exc)
            message = f"ray start failed: {exc}"[:2000]
            mark_ray_container_terminated(self.store, pod, 1, "Error", message, force_failed=True)
            return self.head_retry_s
        self._on_processes_changed()
        current = self.store.try_get("v1", "Pod", namespace, pod_name)
        if (
            current is None
            or current["metadata"]["uid"] != meta["uid"]
            or current["metadata"].get("deletionTimestamp")
        ):
            await runtime.stop()
            self._on_processes_changed()
            return 0.0
        state.head = runtime
        set_running(self.store, current, runtime.pod_ip)
        return None

    async def _restart_in_place(self, pod: dict[str, Any], runtime: HeadRuntime) -> float | None:
        """The kubelet restarting a crashed Ray container (restartPolicy Always/OnFailure); a fault-injected
        stop waits for start_dashboard instead."""
        log.info(
            "head pod %s: the Ray container restarts in place (its jobs are lost)", pod["metadata"]["name"]
        )
        try:
            await runtime.recover()
        except Exception as exc:
            log.warning("restarting the Ray head of %s failed: %s", pod["metadata"]["name"], exc)
            return self.head_retry_s
        self._on_processes_changed()
        set_running(self.store, pod, runtime.pod_ip, restarts=runtime.restarts)
        return None

    def _mark_head_terminated(self, namespace: str, runtime: HeadRuntime, message: str) -> None:
        pod = self.store.try_get("v1", "Pod", namespace, runtime.pod_name)
        if pod is not None:
            mark_ray_container_terminated(self.store, pod, 1, "Error", message, restarts=runtime.restarts)

    # ---- workers -----------------------------------------------------------------------------------------
    async def _reconcile_workers(self, cluster: dict[str, Any], state: _ClusterState) -> float | None:
        namespace = cluster["metadata"].get("namespace", "default")
        groups = (cluster.get("spec") or {}).get("workerGroupSpecs") or []
        workers = [pod for pod in self._pods(cluster) if node_type(pod) == "worker"]
        known = {group.get("groupName") for group in groups}
        for pod in workers:
            if (pod["metadata"].get("labels") or {}).get(GROUP_LABEL) not in known:
                self._delete_pod(namespace, pod["metadata"]["name"])
        requeue: float | None = None
        for group in groups:
            members = [
                p
                for p in workers
                if (p["metadata"].get("labels") or {}).get(GROUP_LABEL) == group["groupName"]
            ]
            unhealthy = [pod for pod in members if should_delete_pod(pod)[0]]
            if unhealthy:  # as KubeRay: delete them and create nothing in this pass
                for pod in unhealthy:
                    self._delete_pod(namespace, pod["metadata"]["name"])
                requeue = self.requeue_s
                continue
            missing = desired_worker_pods(group, False) - len(members)
            if missing < 0:
                newest_first = sorted(
                    members,
                    key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]),
                    reverse=True,
                )
                for pod in newest_first[:-missing]:
                    self._delete_pod(namespace, pod["metadata"]["name"])
            for _ in range(max(missing, 0)):
                await self._create_worker(cluster, group, state)
        await self._forget_vanished_pods(state, self._pods(cluster))
        return requeue

    async def _create_worker(
        self, cluster: dict[str, Any], group: Mapping[str, Any], state: _ClusterState
    ) -> None:
        pod = worker_pod(cluster, group, _suffix())
        pod_ip = self.pod_ips.allocate()
        pod["status"] = running_worker_status(pod, pod_ip)
        created = self.store.create("v1", "Pod", pod)
        name = created["metadata"]["name"]
        state.pod_ips[name] = pod_ip
        containers = created["spec"].get("containers") or [{}]
        declared = [(p.get("name"), int(p["containerPort"])) for p in containers[0].get("ports") or []]
        serve_ports = [
            number for port_name, number in declared if runtime_port_key(port_name, number) == "serve"
        ]

        def serve_target() -> tuple[str, int] | None:
            return state.head.serve_target() if state.head is not None else None

        endpoint = WorkerEndpoint(pod_ip, serve_ports or [8000], serve_target)
        state.workers[name] = endpoint
        await endpoint.start()


def _param_text(value: Any) -> str:
    """rayStartParams values are strings in KubeRay; tolerate numbers and booleans written unquoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
