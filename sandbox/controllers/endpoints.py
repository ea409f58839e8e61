"""EndpointSlice controller: keeps discovery.k8s.io/v1 EndpointSlices in step with each Service's pods, as
Kubernetes' endpointslice controller does (one slice per set of resolved ports, owned by the Service)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

from sandbox.controllers.service import (
    Key,
    Obj,
    PodIndex,
    ResyncController,
    key_of,
    pod_is_ready,
    pod_reports_ready,
    resolve_target_port,
    selected_pods,
)
from sandbox.store import ApiError, Store

SLICE_API_VERSION = "discovery.k8s.io/v1"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"

_Ports = tuple[tuple[str, int, str], ...]  # (name, port, protocol) per Service port, resolved on one pod


def desired_endpoint_slices(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The EndpointSlices a Service with a selector should have, given all pods (any namespace).

    Pods whose named targetPorts resolve to different numbers land in different slices; with no pods there
    is one empty slice carrying the Service's numeric ports.
    """
    spec = service.get("spec") or {}
    publish_not_ready = bool(spec.get("publishNotReadyAddresses"))
    service_ports = spec.get("ports") or []
    groups: dict[_Ports, list[Obj]] = {}
    for pod in selected_pods(service, pods):
        ports = _resolved_ports(service_ports, pod)
        groups.setdefault(ports, []).append(_endpoint(pod, publish_not_ready))
    if not groups:
        numeric = tuple(
            (p.get("name", ""), int(p["targetPort"]), p.get("protocol", "TCP"))
            for p in service_ports
            if isinstance(p.get("targetPort"), int)
        )
        groups[numeric] = []
    return [_slice(service, ports, endpoints) for ports, endpoints in sorted(groups.items())]


def _resolved_ports(service_ports: list[dict[str, Any]], pod: Obj) -> _Ports:
    resolved = []
    for port in service_ports:
        number = resolve_target_port(pod, port.get("targetPort", port.get("port")))
        if number is not None:
            resolved.append((str(port.get("name", "")), number, str(port.get("protocol", "TCP"))))
    return tuple(resolved)


def _endpoint(pod: Obj, publish_not_ready: bool) -> Obj:
    meta = pod["metadata"]
    # As Kubernetes: `ready` excludes terminating pods, `serving` is the pod's own readiness regardless.
    endpoint: Obj = {
        "addresses": [pod["status"]["podIP"]],
        "conditions": {
            "ready": publish_not_ready or pod_is_ready(pod),
            "serving": publish_not_ready or pod_reports_ready(pod),
            "terminating": bool(meta.get("deletionTimestamp")),
        },
        "targetRef": {
            "kind": "Pod",
            "name": meta["name"],
            "namespace": meta.get("namespace") or "default",
            "uid": meta["uid"],
        },
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    return endpoint


def _slice(service: Obj, ports: _Ports, endpoints: list[Obj]) -> Obj:
    meta = service["metadata"]
    signature = json.dumps([meta["uid"], ports]).encode()
    suffix = hashlib.sha256(signature).hexdigest()[:5]
    return {
        "apiVersion": SLICE_API_VERSION,
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{meta['name']}-{suffix}",
            "namespace": meta.get("namespace") or "default",
            "labels": {SERVICE_NAME_LABEL: meta["name"], MANAGED_BY_LABEL: MANAGED_BY},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": name, "port": number, "protocol": protocol} for name, number, protocol in ports],
    }


class EndpointSliceController(ResyncController[Store]):
    watched = (("v1", "Service"), ("v1", "Pod"), (SLICE_API_VERSION, "EndpointSlice"))

    def __init__(self, store: Store) -> None:
        super().__init__(store)

    async def reconcile(self) -> None:
        # Everything below is synchronous: nothing changes in the store between these reads and the writes.
        pods = PodIndex(self.store.read_list("v1", "Pod"))
        managed = self.store.read_list(
            SLICE_API_VERSION, "EndpointSlice", label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}"
        )
        existing = {key_of(s): s for s in managed}
        wanted: dict[Key, Obj] = {}
        for service in self.store.read_list("v1", "Service"):
            selector = (service.get("spec") or {}).get("selector")
            if selector and not service["metadata"].get("deletionTimestamp"):
                candidates = pods.candidates(service)
                wanted.update((key_of(s), s) for s in desired_endpoint_slices(service, candidates))
        for key, endpoint_slice in wanted.items():
            self._apply(existing.get(key), endpoint_slice)
        for key in existing.keys() - wanted.keys():
            with contextlib.suppress(ApiError):  # already collected with its Service
                self.store.delete(SLICE_API_VERSION, "EndpointSlice", *key)

    def _apply(self, current: Obj | None, desired: Obj) -> None:
        if current is None:
            self.store.create(SLICE_API_VERSION, "EndpointSlice", desired)
            return
        updated = {**current, **{f: desired[f] for f in _SLICE_FIELDS}}
        updated["metadata"] = {**current["metadata"], **{f: desired["metadata"][f] for f in _SLICE_METADATA}}
        if updated != current:
            self.store.update(SLICE_API_VERSION, "EndpointSlice", updated)


_SLICE_FIELDS = ("addressType", "endpoints", "ports")
_SLICE_METADATA = ("labels", "ownerReferences")
