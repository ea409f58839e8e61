"""The node agent: raypilot's stand-in for a kubelet, for a control plane whose pods are local processes.

It registers a Node, binds every pending pod that names no node to itself (one node: nothing to choose),
runs the pods bound to it (`PodRunner`), runs kube-proxy for the node's Service data plane (kubeproxy.py),
keeps each pod's /etc/hosts in step with the cluster's Services, and finishes deletions: once a pod has a
deletionTimestamp its containers get SIGTERM (SIGKILL after the grace period), its network is removed, and
the pod is deleted for good (grace period 0, on its uid). The API server reads containers' logs from the
agent's HTTPS API (kubelet_api.py), as from a kubelet's.

The API server is read through list-then-watch loops (pods, Services, EndpointSlices) on threads, which hand
the events to the agent's event loop; a watch that ends or expires (410 Gone) is listed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from sandbox.listwatch import SYNC, list_then_watch
from sandbox.nodeagent.containers import PodFiles, RayImage
from sandbox.nodeagent.kubelet_api import KUBELET_PORT, ContainerLog, NodeApi, request_serving_certificate
from sandbox.nodeagent.kubeproxy import KubeProxy
from sandbox.nodeagent.network import NodeNetwork, hosts_file
from sandbox.nodeagent.pods import PodRunner, rfc3339_now
from sandbox.nodeagent.podstatus import RunState
from sandbox.nodeagent.serviceaccount import API_PORT, TOKEN_SECONDS, TokenIssuer
from sandbox.proxy import TcpForwarder

__all__ = ["ApiReader", "NodeAgent", "service_addresses"]

log = logging.getLogger(__name__)
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
Obj = dict[str, Any]


class ApiReader:
    """Secrets and ConfigMaps for containers' environments, read from the API server."""

    def __init__(self, api: k8s.ApiClient) -> None:
        self.api, self.core = api, k8s.CoreV1Api(api)

    def try_get(self, api_version: str, kind: str, namespace: str | None, name: str) -> Obj | None:
        read = {"Secret": self.core.read_namespaced_secret, "ConfigMap": self.core.read_namespaced_config_map}
        try:
            found = read[kind](name, namespace or "default")
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        obj: Obj = self.api.sanitize_for_serialization(found)
        return obj


def service_addresses(
    cluster_ips: Mapping[tuple[str, str], str], slices: Mapping[str, Obj]
) -> dict[tuple[str, str], str]:
    """(namespace, Service) -> the address its name resolves to in pods: its clusterIP (kube-proxy answers
    there); for a headless Service, the first ready endpoint's address (any endpoint's when none is ready), by
    address order."""
    ready: dict[tuple[str, str], list[str]] = {}
    other: dict[tuple[str, str], list[str]] = {}
    for item in slices.values():
        metadata = item.get("metadata") or {}
        service = (metadata.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if not service or item.get("addressType") != "IPv4":
            continue
        key = (str(metadata.get("namespace")), str(service))
        for endpoint in item.get("endpoints") or []:
            is_ready = (endpoint.get("conditions") or {}).get("ready") is not False
            (ready if is_ready else other).setdefault(key, []).extend(endpoint.get("addresses") or [])
    headless = {
        key: sorted(ready.get(key) or other[key])[0]
        for key in {*ready, *other}
        if ready.get(key) or other.get(key)
    }
    return {**headless, **cluster_ips}


def cluster_ip(service: Obj) -> str | None:
    """The Service's clusterIP, None for a headless one."""
    address = (service.get("spec") or {}).get("clusterIP")
    return None if not address or address == "None" else str(address)


class NodeAgent:
    def __init__(
        self,
        api: k8s.ApiClient,
        node: str,
        directory: Path,
        network: NodeNetwork,
        image: RayImage | None = None,
        kube_proxy: str | None = None,
    ) -> None:
        """`kube_proxy`: the kube-proxy binary; without it the node has no Service data plane and a Service's
        name resolves to an endpoint in pods."""
        self.api, self.node, self.directory, self.network = api, node, directory, network
        self.image = image or RayImage()
        self.core = k8s.CoreV1Api(api)
        self.reader = ApiReader(api)
        self.runners: dict[str, PodRunner] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        # (namespace, pod) -> (uid, files) of the pods started here, until deleted: their logs stay readable
        # after their containers end (a finished Job's pod).
        self.pod_files: dict[tuple[str, str], tuple[str, PodFiles]] = {}
        self.slices: dict[str, Obj] = {}
        self.cluster_ips: dict[tuple[str, str], str] = {}
        self.kube_proxy = (
            KubeProxy(api, kube_proxy, node, network, directory / "kube-proxy") if kube_proxy else None
        )
        self.services: dict[tuple[str, str], str] = self._with_api_service({})
        self.api_forwarder = TcpForwarder(network.node_ip, API_PORT, self._api_server_address)
        ca_file = api.configuration.ssl_ca_cert
        self.issuer = TokenIssuer(self._issue_token, Path(ca_file).read_bytes() if ca_file else b"")
        self.node_api = NodeApi(network.node_ip, KUBELET_PORT, str(ca_file or ""), self)
        self._events: asyncio.Queue[tuple[str, str, Obj]] = asyncio.Queue()
        self._stop = threading.Event()
        self._binding: set[str] = set()
        self._deleting: set[str] = set()
        self._background: set[asyncio.Future[None]] = set()

    # ---- the Node --------------------------------------------------------------------------------------

    def register(self) -> None:
        """Creates the Node (or takes over one of that name) and reports it Ready with its address."""
        node = k8s.V1Node(
            metadata=k8s.V1ObjectMeta(name=self.node, labels={"kubernetes.io/hostname": self.node})
        )
        with contextlib.suppress(ApiException):
            self.core.create_node(node)
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        capacity = {"cpu": str(os.cpu_count() or 1), "memory": f"{pages // 1024}Ki", "pods": "110"}
        now = rfc3339_now()
        status = {
            "capacity": capacity,
            "allocatable": capacity,
            "addresses": [
                {"type": "InternalIP", "address": self.network.node_ip},
                {"type": "Hostname", "address": self.node},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.node_api.port}},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "raypilot node agent is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": {
                "kubeletVersion": "raypilot-node-agent",
                "containerRuntimeVersion": "local-process://1",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "osImage": "",
                "kernelVersion": os.uname().release,
                "kubeProxyVersion": "",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
            },
        }
        self.core.patch_node_status(
            self.node, {"status": status}, _content_type="application/merge-patch+json"
        )

    # ---- the loop --------------------------------------------------------------------------------------

    def _deliver(self, kind: str, event: str, obj: Obj) -> None:
        self._loop.call_soon_threadsafe(self._events.put_nowait, (kind, event, obj))

    async def run(self) -> None:
        self._loop = asyncio.get_running_loop()
        cert, key = await asyncio.to_thread(
            request_serving_certificate, self.api, self.node, self.network.node_ip, self.directory / "pki"
        )
        await self.node_api.start(cert, key)
        await asyncio.to_thread(self.register)
        await self.api_forwarder.start()
        if self.kube_proxy is not None:
            await self.kube_proxy.start(self.directory / "kube-proxy.log")
        discovery = k8s.DiscoveryV1Api(self.api)
        for kind, call in (
            ("Pod", self.core.list_pod_for_all_namespaces),
            ("Service", self.core.list_service_for_all_namespaces),
            ("EndpointSlice", discovery.list_endpoint_slice_for_all_namespaces),
        ):
            threading.Thread(
                target=list_then_watch,
                args=(kind, call, self._deliver, self._stop),
                name=f"watch-{kind}",
                daemon=True,
            ).start()
        while True:
            kind, event, obj = await self._events.get()
            if kind == "EndpointSlice":
                self._on_slices(event, obj)
            elif kind == "Service":
                self._on_service(event, obj)
            elif event == SYNC:
                for pod in obj.get("items") or []:
                    self._on_pod("ADDED", pod)
            else:
                self._on_pod(event, obj)

    async def shutdown(self) -> None:
        self._stop.set()
        await asyncio.gather(*(runner.stop(0) for runner in self.runners.values()))
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        for runner in self.runners.values():
            runner.files.remove_tmp()
        if self.kube_proxy is not None:
            await self.kube_proxy.stop()
        await self.api_forwarder.stop()
        await self.node_api.stop()
        self.network.close()

    def _on_slices(self, event: str, obj: Obj) -> None:
        if event == SYNC:
            self.slices = {item["metadata"]["uid"]: item for item in obj.get("items") or []}
        elif event == "DELETED":
            self.slices.pop(obj["metadata"]["uid"], None)
        else:
            self.slices[obj["metadata"]["uid"]] = obj
        self._services_changed()

    def _on_service(self, event: str, obj: Obj) -> None:
        if self.kube_proxy is None:
            return  # no data plane: names resolve to endpoints
        items = (obj.get("items") or []) if event == SYNC else [obj]
        if event == SYNC:
            self.cluster_ips = {}
        for service in items:
            key = (str(service["metadata"]["namespace"]), str(service["metadata"]["name"]))
            address = cluster_ip(service)
            if event == "DELETED" or address is None:
                self.cluster_ips.pop(key, None)
            else:
                self.cluster_ips[key] = address
        self._services_changed()

    def _services_changed(self) -> None:
        services = self._with_api_service(service_addresses(self.cluster_ips, self.slices))
        if services != self.services:
            self.services = services
            for runner in self.runners.values():
                self._write_hosts(runner)

    # ---- the way from pods to the API server ----------------------------------------------------------

    def _with_api_service(self, services: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
        """The `kubernetes` Service answers on the node's address, where `api_forwarder` listens."""
        return {**services, ("default", "kubernetes"): self.network.node_ip}

    def _api_server_address(self) -> tuple[str, int]:
        address = urlsplit(str(self.api.configuration.host))
        return str(address.hostname), int(address.port or 443)

    async def _issue_token(self, pod: Mapping[str, Any]) -> str:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        request = k8s.AuthenticationV1TokenRequest(
            spec=k8s.V1TokenRequestSpec(
                audiences=[],
                expiration_seconds=TOKEN_SECONDS,
                bound_object_ref=k8s.V1BoundObjectReference(
                    api_version="v1", kind="Pod", name=metadata["name"], uid=metadata["uid"]
                ),
            )
        )
        answer = await asyncio.to_thread(
            self.core.create_namespaced_service_account_token,
            str(spec.get("serviceAccountName") or "default"),
            metadata["namespace"],
            request,
        )
        if answer.status is None or not answer.status.token:
            raise RuntimeError("the API server answered the TokenRequest without a token")
        return str(answer.status.token)

    def _write_hosts(self, runner: PodRunner) -> None:
        metadata, spec = runner.pod["metadata"], runner.pod.get("spec") or {}
        names = [str(spec.get("hostname") or metadata["name"])]
        if spec.get("subdomain"):
            names.insert(0, f"{names[0]}.{spec['subdomain']}.{metadata['namespace']}.svc.cluster.local")
        runner.network.write_hosts(hosts_file(runner.network.ip, names, metadata["namespace"], self.services))

    def _on_pod(self, event: str, pod: Obj) -> None:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        uid = str(metadata["uid"])
        if event == "DELETED":
            self._binding.discard(uid)
            if uid in self.runners or uid in self.tasks:  # a finished pod's task is forgotten here too
                self._spawn(self._finish(uid, pod, delete=False))
            return
        node = spec.get("nodeName")
        if not node:
            if not metadata.get("deletionTimestamp") and uid not in self._binding:
                self._binding.add(uid)
                self._spawn(self._bind(pod))
            return
        if node != self.node:
            return
        if metadata.get("deletionTimestamp"):
            if uid not in self._deleting:
                self._deleting.add(uid)
                self._spawn(self._finish(uid, pod, delete=True))
            return
        phase = (pod.get("status") or {}).get("phase")
        if uid not in self.runners and uid not in self.tasks and phase not in ("Succeeded", "Failed"):
            self._start(uid, pod)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _bind(self, pod: Obj) -> None:
        metadata = pod["metadata"]
        binding = k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(name=metadata["name"], uid=metadata["uid"]),
            target=k8s.V1ObjectReference(api_version="v1", kind="Node", name=self.node),
        )
        bound = await self._until_answered(
            f"binding {metadata['namespace']}/{metadata['name']}",
            lambda: self.core.create_namespaced_pod_binding(
                metadata["name"], metadata["namespace"], binding, _preload_content=False
            ),
        )
        if not bound:
            self._binding.discard(metadata["uid"])

    async def _until_answered(self, what: str, call: Callable[[], object]) -> bool:
        """Makes the call until the API server answers it, as a kubelet does: a refused connection (the API
        server restarting), 429 and 5xx are tried again a second later. 404 and 409 count as answers (gone,
        or done meanwhile); False for any other refusal, which is logged."""
        while not self._stop.is_set():
            try:
                await asyncio.to_thread(call)
                return True
            except ApiException as error:
                if error.status in (404, 409):
                    return True
                if error.status != 429 and error.status < 500:
                    log.warning("%s refused: %s", what, error)
                    return False
                log.warning("%s: HTTP %s; again soon", what, error.status)
            except Exception as error:
                log.warning("%s failed (%s); again soon", what, error)
            await asyncio.sleep(1.0)
        return False

    def _start(self, uid: str, pod: Obj) -> None:
        metadata = pod["metadata"]
        network = self.network.attach(uid)
        files = PodFiles(
            self.directory / "pods" / f"{metadata['namespace']}_{metadata['name']}_{uid[:8]}",
            Path("/tmp") / network.netns,
            self.image,
        )
        namespace, name = metadata["namespace"], metadata["name"]

        async def write_status(status: dict[str, Any]) -> None:
            try:
                await asyncio.to_thread(
                    self.core.patch_namespaced_pod_status,
                    name,
                    namespace,
                    {"metadata": {"uid": uid}, "status": status},
                    _content_type="application/strategic-merge-patch+json",
                )
            except ApiException as error:
                if error.status not in (404, 409):
                    raise

        runner = PodRunner(pod, network, files, self.network.node_ip, self.reader, write_status, self.issuer)
        self.runners[uid] = runner
        self.pod_files[(namespace, name)] = (uid, files)
        self._write_hosts(runner)
        self.tasks[uid] = asyncio.ensure_future(self._run(uid, runner))

    async def _run(self, uid: str, runner: PodRunner) -> None:
        try:
            await runner.run()
        except Exception:
            log.exception("pod %s failed in the node agent", runner.name)
        if runner.finished and not runner.stopping.is_set():
            # Done for good (a Job's pod): its processes are gone; its network is no longer needed.
            self.runners.pop(uid, None)
            self.network.detach(uid)
            runner.files.remove_tmp()

    async def _finish(self, uid: str, pod: Obj, *, delete: bool) -> None:
        runner = self.runners.pop(uid, None)
        if runner is not None:
            await runner.stop(pod["metadata"].get("deletionGracePeriodSeconds"))
        task = self.tasks.pop(uid, None)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        self.network.detach(uid)
        if runner is not None:
            runner.files.remove_tmp()
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        if self.pod_files.get(key, ("",))[0] == uid:
            del self.pod_files[key]
        if delete:
            metadata = pod["metadata"]
            options = k8s.V1DeleteOptions(grace_period_seconds=0, preconditions=k8s.V1Preconditions(uid=uid))
            await self._until_answered(
                f"deleting {metadata['namespace']}/{metadata['name']}",
                lambda: self.core.delete_namespaced_pod(
                    metadata["name"], metadata["namespace"], body=options
                ),
            )
        self._deleting.discard(uid)

    # ---- logs (kubelet_api.py) -------------------------------------------------------------------------

    def container_log(self, namespace: str, pod: str, container: str, previous: bool) -> ContainerLog | str:
        known = self.pod_files.get((namespace, pod))
        if known is None:
            return f'pod "{pod}" in namespace "{namespace}" has not run on node "{self.node}"'
        uid, files = known
        if previous:
            path = files.previous_log(container)
            if not path.exists():
                return f'previous terminated container "{container}" in pod "{pod}" not found'
            return ContainerLog(path, lambda: False)
        path = files.log(container)
        if not path.exists():
            return f'container "{container}" in pod "{pod}" is waiting to start'

        def running() -> bool:
            runner = self.runners.get(uid)
            runs = (*runner.init, *runner.main) if runner is not None else ()
            return any(run.name == container and run.state is RunState.RUNNING for run in runs)

        return ContainerLog(path, running)
