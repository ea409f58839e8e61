"""An in-memory Kubernetes + Ray Serve + Gateway world behind fake activities registered under the real
activity names, for time-skipping tests of RayServiceWorkflow.

The world reacts at once to what the workflow does (a created cluster's head is ready, a PUT config runs
its applications with their replicas) unless a test says otherwise. Waits compare with the workflow's last
view: a difference returns at once; no difference raises a benign retryable error with `next_retry_delay`
(`FakeRayWorld.unchanged_retry`), so between attempts no activity is in flight and the test server can skip
time, while history grows by nothing (retries are not recorded), just as with the real long waits.

Every act is logged with the workflow time its attempt was scheduled at (`FakeRayWorld.log`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from models.naming import ANNOTATION_HASH, LABEL_CLUSTER, LABEL_SERVE
from models.operator import OperatorConfig
from wire import names
from wire.dashboard import PutServeConfig, ServeObservation, WaitServe
from wire.kubernetes import (
    ClusterPods,
    CreateObject,
    DeleteObject,
    GatewayObservation,
    ObjectKey,
    Observation,
    OwnedObjects,
    PodLabels,
    RecordEvent,
    ServiceEndpoints,
    UpdateSpec,
    WaitGateway,
    WaitRayCluster,
    WaitReadyEndpoints,
)
from wire.names import READ_OPERATOR_CONFIG
from wire.views import gateway_view, raycluster_view, serve_view


@dataclass
class LoggedAct:
    at: datetime
    verb: str
    kind: str
    name: str
    detail: Any = None


@dataclass
class FakeCluster:
    body: dict[str, Any]
    head_ready: bool = True
    serve_mode: str = "running"  # running | deploying | failed | down (dashboard does not answer)
    config: dict[str, Any] | None = None
    head_generation: int = 1
    head_labels: dict[str, str] = field(default_factory=lambda: {LABEL_SERVE: "false"})
    # Worker Pods are recreated (generation + 1) when deleted; each group's Pods run the spec hash the
    # cluster had when they were created, as KubeRay's RayCluster controller creates them from the template.
    worker_generations: dict[str, int] = field(default_factory=dict)
    pod_hashes: dict[str, str] = field(default_factory=dict)

    def pods(self) -> list[dict[str, Any]]:
        """The head and worker Pods, Running and Ready, labelled as KubeRay labels them."""
        ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        found: list[dict[str, Any]] = []
        head = self.head_pod()
        if head is not None:
            head["metadata"]["labels"].update({"ray.io/node-type": "head", "ray.io/group": "headgroup"})
            found.append({**head, "status": {**head["status"], **ready}})
        for group in (self.body.get("spec") or {}).get("workerGroupSpecs") or []:
            name = group["groupName"]
            generation = self.worker_generations.setdefault(name, 1)
            for index in range(int(group.get("replicas") or group.get("minReplicas") or 0)):
                pod_name = f"{self.name}-{name}-worker-{generation}-{index}"
                labels = {"ray.io/node-type": "worker", "ray.io/group": name}
                found.append(
                    {
                        "metadata": {"name": pod_name, "uid": f"uid-{pod_name}", "labels": labels},
                        "status": ready,
                    }
                )
        for pod in found:
            group = pod["metadata"]["labels"]["ray.io/group"]
            self.pod_hashes.setdefault(
                self._pod_key(pod), self.body["metadata"]["annotations"].get(ANNOTATION_HASH, "")
            )
            pod["metadata"]["annotations"] = {
                "fake/spec-hash": self.pod_hashes[self._pod_key(pod)],
                "fake/group": group,
            }
        return found

    @staticmethod
    def _pod_key(pod: dict[str, Any]) -> str:
        return str(pod["metadata"]["name"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    def obj(self) -> dict[str, Any]:
        body = copy.deepcopy(self.body)
        conditions = [
            {
                "type": "HeadPodReady",
                "status": "True" if self.head_ready else "False",
                "reason": "HeadPodRunning",
            }
        ]
        body["status"] = {"state": "ready" if self.head_ready else "", "conditions": conditions}
        return body

    def head_pod(self) -> dict[str, Any] | None:
        if not self.head_ready:
            return None
        return {
            "metadata": {
                "name": f"{self.name}-head-{self.head_generation}",
                "uid": f"uid-{self.name}-head-{self.head_generation}",
                "labels": dict(self.head_labels),
            },
            "spec": {"containers": [{"name": "ray-head"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"},
        }

    def details(self) -> dict[str, Any] | None:
        if self.serve_mode == "down":
            return None
        applications: dict[str, Any] = {}
        capacity = (self.config or {}).get("target_capacity")
        for app in (self.config or {}).get("applications") or []:
            deployments: dict[str, Any] = {}
            for deployment in app.get("deployments") or [{"name": "default", "num_replicas": 1}]:
                wanted = int(deployment.get("num_replicas", 1))
                target = wanted if capacity is None else math.ceil(wanted * float(capacity) / 100)
                running = target if self.serve_mode == "running" else 0
                deployments[deployment["name"]] = {
                    "status": "HEALTHY" if self.serve_mode == "running" else "UPDATING",
                    "message": "",
                    "target_num_replicas": target,
                    "replicas": [
                        {"replica_id": f"r{rank}", "state": "RUNNING", "rank": rank, "world_size": wanted}
                        for rank in range(running)
                    ],
                }
            status = {"running": "RUNNING", "deploying": "DEPLOYING", "failed": "DEPLOY_FAILED"}[
                self.serve_mode
            ]
            applications[app.get("name", "default")] = {
                "status": status,
                "message": "",
                "deployments": deployments,
            }
        return {"applications": applications, "target_capacity": capacity}

    def serving(self) -> bool:
        details = self.details()
        apps = (details or {}).get("applications") or {}
        return bool(apps) and all(app["status"] == "RUNNING" for app in apps.values())

    def worker_replicas(self) -> int:
        groups = (self.body.get("spec") or {}).get("workerGroupSpecs") or []
        return sum(int(group.get("replicas") or group.get("minReplicas") or 0) for group in groups)


class Unchanged(ApplicationError):
    pass


class FakeRayWorld:
    def __init__(self, config: OperatorConfig | None = None) -> None:
        self.config = config or OperatorConfig()
        self.clusters: dict[str, FakeCluster] = {}
        self.deleted_clusters: list[str] = []
        self.services: dict[str, dict[str, Any]] = {}
        self.gateway: dict[str, Any] | None = None
        self.route: dict[str, Any] | None = None
        self.events: list[RecordEvent] = []
        self.log: list[LoggedAct] = []
        self.heads_start_ready = True
        self.serve_mode_for_new_clusters = "running"
        self.reject_serve_config = False
        # Set: a deleted Pod leaves its cluster's Serve in this mode (e.g. "deploying" while replicas move).
        self.serve_mode_after_pod_delete: str | None = None
        self.endpoints_wait_registered = True
        self.unchanged_retry: timedelta | None = timedelta(seconds=30)
        self._uid = 0

    # ---- helpers for tests -------------------------------------------------------------------------------

    def acts(self, verb: str, kind: str | None = None) -> list[LoggedAct]:
        return [act for act in self.log if act.verb == verb and (kind is None or act.kind == kind)]

    def live_clusters(self) -> list[str]:
        return sorted(self.clusters)

    def selected_cluster(self, service: str) -> str:
        return str(
            ((self.services.get(service) or {}).get("spec") or {}).get("selector", {}).get(LABEL_CLUSTER, "")
        )

    def restart_head(self, cluster: str, lose_applications: bool = True) -> None:
        """The head Pod restarts; without GCS fault tolerance Serve forgets every application."""
        fake = self.clusters[cluster]
        fake.head_generation += 1
        fake.head_labels = {LABEL_SERVE: "false"}
        if lose_applications:
            fake.config = None

    # ---- internals -----------------------------------------------------------------------------------------

    def _record(self, verb: str, kind: str, name: str, detail: Any = None) -> None:
        self.log.append(LoggedAct(activity.info().current_attempt_scheduled_time, verb, kind, name, detail))

    def _next_uid(self) -> str:
        self._uid += 1
        return f"uid-{self._uid}"

    def _unchanged(self) -> Unchanged:
        return Unchanged(
            "nothing changed yet",
            type="Unchanged",
            next_retry_delay=self.unchanged_retry if self.unchanged_retry else None,
            category=ApplicationErrorCategory.BENIGN,
        )

    def _endpoints(self, service: str) -> int:
        cluster = self.clusters.get(self.selected_cluster(service))
        if cluster is None or not cluster.serving():
            return 0
        head = 1 if cluster.head_labels.get(LABEL_SERVE) == "true" else 0
        return head + cluster.worker_replicas()

    def _serve_observation(self, cluster: str) -> ServeObservation:
        fake = self.clusters.get(cluster)
        details = fake.details() if fake is not None and fake.head_ready else None
        head = fake.head_pod() if fake is not None else None
        healthy = fake.serving() if fake is not None and head is not None else False
        view = serve_view(details, head, healthy, True)
        return ServeObservation(details, "" if details is not None else "unreachable", head, healthy, view)

    def _owned(self, request: OwnedObjects) -> list[dict[str, str]]:
        found = [
            {"kind": "RayCluster", "name": name, "namespace": request.namespace} for name in self.clusters
        ]
        found += [{"kind": "Service", "name": name, "namespace": request.namespace} for name in self.services]
        if self.gateway is not None:
            found.append(
                {"kind": "Gateway", "name": self.gateway["metadata"]["name"], "namespace": request.namespace}
            )
        if self.route is not None:
            found.append(
                {"kind": "HTTPRoute", "name": self.route["metadata"]["name"], "namespace": request.namespace}
            )
        return [ref for ref in found if ref["name"] not in request.keep]

    # ---- the activities ------------------------------------------------------------------------------------

    def activities(self) -> list[Any]:
        world = self

        @activity.defn(name=READ_OPERATOR_CONFIG)
        async def read_operator_config() -> OperatorConfig:
            return world.config

        @activity.defn(name=names.CREATE_RAYCLUSTER)
        async def create_raycluster(request: CreateObject) -> dict[str, Any]:
            body = copy.deepcopy(request.body)
            name = body["metadata"]["name"]
            if name not in world.clusters:
                body["metadata"]["uid"] = world._next_uid()
                if request.ownership is not None:
                    body["metadata"].setdefault("labels", {}).update(request.ownership.labels())
                world.clusters[name] = FakeCluster(
                    body, head_ready=world.heads_start_ready, serve_mode=world.serve_mode_for_new_clusters
                )
                world.clusters[name].pods()  # the Pods run the spec they were created from
                world._record("create", "RayCluster", name, body)
            return world.clusters[name].obj()

        @activity.defn(name=names.GET_RAYCLUSTER)
        async def get_raycluster(key: ObjectKey) -> dict[str, Any] | None:
            found = world.clusters.get(key.name)
            return found.obj() if found is not None else None

        @activity.defn(name=names.UPDATE_RAYCLUSTER_SPEC)
        async def update_raycluster_spec(request: UpdateSpec) -> dict[str, Any] | None:
            found = world.clusters.get(request.name)
            if found is None:
                return None
            found.body["spec"] = copy.deepcopy(request.spec)
            for key, changes in (("labels", request.labels), ("annotations", request.annotations)):
                current = found.body["metadata"].setdefault(key, {})
                for label, value in changes.items():
                    if value is None:
                        current.pop(label, None)
                    else:
                        current[label] = value
            world._record("update", "RayCluster", request.name, copy.deepcopy(request.spec))
            return found.obj()

        @activity.defn(name=names.DELETE_RAYCLUSTER)
        async def delete_raycluster(request: DeleteObject) -> bool:
            if world.clusters.pop(request.name, None) is None:
                return False
            world.deleted_clusters.append(request.name)
            world._record("delete", "RayCluster", request.name)
            return True

        @activity.defn(name=names.CREATE_SERVICE)
        async def create_service(request: CreateObject) -> dict[str, Any]:
            name = request.body["metadata"]["name"]
            if name not in world.services:
                world.services[name] = copy.deepcopy(request.body)
                world._record("create", "Service", name, copy.deepcopy(request.body))
            return copy.deepcopy(world.services[name])

        @activity.defn(name=names.UPDATE_SERVICE_SPEC)
        async def update_service_spec(request: UpdateSpec) -> dict[str, Any] | None:
            found = world.services.get(request.name)
            if found is None:
                return None
            found["spec"] = copy.deepcopy(request.spec)
            world._record("update", "Service", request.name, copy.deepcopy(request.spec))
            return copy.deepcopy(found)

        @activity.defn(name=names.COUNT_READY_ENDPOINTS)
        async def count_ready_endpoints(request: ServiceEndpoints) -> int:
            return world._endpoints(request.service_name)

        @activity.defn(name=names.PATCH_POD_LABELS)
        async def patch_pod_labels(request: PodLabels) -> dict[str, Any] | None:
            for cluster in world.clusters.values():
                pod = cluster.head_pod()
                if pod is not None and pod["metadata"]["name"] == request.name:
                    for key, value in request.labels.items():
                        if value is not None:
                            cluster.head_labels[key] = value
                    world._record("label", "Pod", request.name, dict(request.labels))
                    return cluster.head_pod()
            return None

        @activity.defn(name=names.LIST_CLUSTER_PODS)
        async def list_cluster_pods(request: ClusterPods) -> list[dict[str, Any]]:
            found = world.clusters.get(request.cluster_name)
            return found.pods() if found is not None else []

        @activity.defn(name=names.DELETE_POD)
        async def delete_pod(request: DeleteObject) -> bool:
            for cluster in world.clusters.values():
                for pod in cluster.pods():
                    if pod["metadata"]["uid"] != request.uid:
                        continue
                    world._record("delete", "Pod", request.name)
                    if world.serve_mode_after_pod_delete is not None:
                        cluster.serve_mode = world.serve_mode_after_pod_delete
                    group = pod["metadata"]["labels"]["ray.io/group"]
                    if group == "headgroup":
                        world.restart_head(cluster.name)
                    else:
                        cluster.worker_generations[group] += 1
                    return True
            return False

        @activity.defn(name=names.PUT_SERVE_CONFIG)
        async def put_serve_config(request: PutServeConfig) -> None:
            cluster = request.target.head_service.removesuffix("-head-svc")
            if world.reject_serve_config:
                raise ApplicationError("UpdateDeployments fail: 400 bad config", non_retryable=True)
            world.clusters[cluster].config = copy.deepcopy(request.config)
            world._record("put", "ServeConfig", cluster, copy.deepcopy(request.config))

        @activity.defn(name=names.RECORD_EVENT)
        async def record_event(request: RecordEvent) -> str:
            world.events.append(request)
            return request.event_id

        @activity.defn(name=names.DELETE_OWNED_OBJECTS)
        async def delete_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
            owned = world._owned(request)
            for ref in owned:
                if ref["kind"] == "RayCluster":
                    world.clusters.pop(ref["name"], None)
                    world.deleted_clusters.append(ref["name"])
                elif ref["kind"] == "Service":
                    world.services.pop(ref["name"], None)
                elif ref["kind"] == "Gateway":
                    world.gateway = None
                else:
                    world.route = None
                world._record("delete", ref["kind"], ref["name"])
            return owned

        @activity.defn(name=names.LIST_OWNED_OBJECTS)
        async def list_owned_objects(request: OwnedObjects) -> list[dict[str, str]]:
            return world._owned(request)

        @activity.defn(name=names.WAIT_RAYCLUSTER)
        async def wait_raycluster(request: WaitRayCluster) -> Observation:
            found = world.clusters.get(request.name)
            obj = found.obj() if found is not None else None
            view = raycluster_view(obj)
            if obj is not None:
                del obj["spec"]  # waits return metadata and status only
            if found is None or (request.until == "head_ready" and found.head_ready):
                return Observation(obj, view)
            if request.until == "change" and view != request.last_view:
                return Observation(obj, view)
            raise world._unchanged()

        @activity.defn(name=names.WAIT_SERVE)
        async def wait_serve(request: WaitServe) -> ServeObservation:
            observation = world._serve_observation(request.cluster_name)
            if observation.view != request.last_view:
                return observation
            raise world._unchanged()

        @activity.defn(name=names.WAIT_READY_ENDPOINTS)
        async def wait_ready_endpoints(request: WaitReadyEndpoints) -> dict[str, int]:
            counts = {name: world._endpoints(name) for name in request.service_names}
            if counts != request.last_counts:
                return counts
            raise world._unchanged()

        @activity.defn(name=names.CREATE_GATEWAY)
        async def create_gateway(request: CreateObject) -> dict[str, Any]:
            if world.gateway is None:
                world.gateway = copy.deepcopy(request.body)
                world.gateway["status"] = {
                    "conditions": [
                        {"type": "Accepted", "status": "True"},
                        {"type": "Programmed", "status": "True"},
                    ]
                }
                world._record("create", "Gateway", request.body["metadata"]["name"])
            return copy.deepcopy(world.gateway)

        @activity.defn(name=names.UPDATE_GATEWAY_SPEC)
        async def update_gateway_spec(request: UpdateSpec) -> dict[str, Any] | None:
            if world.gateway is None:
                return None
            world.gateway["spec"] = copy.deepcopy(request.spec)
            return copy.deepcopy(world.gateway)

        def route_status(route: dict[str, Any]) -> dict[str, Any]:
            parent = route["spec"]["parentRefs"][0]
            conditions = [{"type": "Accepted", "status": "True"}, {"type": "ResolvedRefs", "status": "True"}]
            return {"parents": [{"parentRef": parent, "conditions": conditions}]}

        @activity.defn(name=names.CREATE_HTTPROUTE)
        async def create_httproute(request: CreateObject) -> dict[str, Any]:
            if world.route is None:
                world.route = copy.deepcopy(request.body)
                world.route["status"] = route_status(world.route)
                world._record("create", "HTTPRoute", request.body["metadata"]["name"], _weights(world.route))
            return copy.deepcopy(world.route)

        @activity.defn(name=names.GET_HTTPROUTE)
        async def get_httproute(key: ObjectKey) -> dict[str, Any] | None:
            return copy.deepcopy(world.route)

        @activity.defn(name=names.UPDATE_HTTPROUTE_SPEC)
        async def update_httproute_spec(request: UpdateSpec) -> dict[str, Any] | None:
            if world.route is None:
                return None
            world.route["spec"] = copy.deepcopy(request.spec)
            world.route["status"] = route_status(world.route)
            world._record("update", "HTTPRoute", request.name, _weights(world.route))
            return copy.deepcopy(world.route)

        @activity.defn(name=names.WAIT_GATEWAY)
        async def wait_gateway(request: WaitGateway) -> GatewayObservation:
            ready = world.gateway is not None and world.route is not None
            view = gateway_view(world.gateway, world.route, ready)
            if view != request.last_view:
                return GatewayObservation(
                    copy.deepcopy(world.gateway), copy.deepcopy(world.route), ready, view
                )
            raise world._unchanged()

        found = [
            read_operator_config,
            create_raycluster,
            get_raycluster,
            update_raycluster_spec,
            delete_raycluster,
            create_service,
            update_service_spec,
            count_ready_endpoints,
            patch_pod_labels,
            list_cluster_pods,
            delete_pod,
            put_serve_config,
            record_event,
            delete_owned_objects,
            list_owned_objects,
            wait_raycluster,
            wait_serve,
            create_gateway,
            update_gateway_spec,
            create_httproute,
            get_httproute,
            update_httproute_spec,
            wait_gateway,
        ]
        if self.endpoints_wait_registered:
            found.append(wait_ready_endpoints)
        return found


def _weights(route: dict[str, Any]) -> dict[str, int]:
    refs = route["spec"]["rules"][0]["backendRefs"]
    return {str(ref["name"]): int(ref.get("weight", 1)) for ref in refs}


