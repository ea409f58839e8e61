"""Adopting a RayService's or a RayJob's KubeRay leftovers through the Kubernetes API (blocking: called in a
thread); what is adopted is decided in raypilot.adopt.plan and raypilot.adopt.rayjob."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from models.naming import head_service_name, serve_service_name, submitter_job_name
from models.rayjob import RayJob
from models.rayservice import RayService
from raypilot.adopt.plan import AdoptionPlan, ObjectPatch, adoption_plan, leftover_selector
from raypilot.adopt.rayjob import (
    RayJobAdoptionPlan,
    rayjob_adoption_plan,
    rayjob_leftover_selector,
    unadopted_leftovers,
)

_GATEWAY = ("gateway.networking.k8s.io", "v1")
_CUSTOM = {
    "RayCluster": ("ray.io", "v1", "rayclusters"),
    "Gateway": (*_GATEWAY, "gateways"),
    "HTTPRoute": (*_GATEWAY, "httproutes"),
}


def _absent(error: ApiException) -> bool:
    return bool(error.status == 404)  # the object, or the whole API (no Gateway API installed)


def adopt_rayservice_leftovers(
    api_client: client.ApiClient, rayservice: RayService, owner: dict[str, Any] | None
) -> AdoptionPlan:
    """Finds what KubeRay left for the RayService and patches it over to raypilot (idempotent: adopting
    again changes nothing). Returns the plan; its `cluster` is "" when there was nothing to adopt."""
    custom: Any = client.CustomObjectsApi(api_client)
    core: Any = client.CoreV1Api(api_client)
    namespace, name = rayservice.metadata.namespace, rayservice.metadata.name
    clusters = custom.list_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", label_selector=leftover_selector(name)
    )["items"]
    if not clusters:
        return AdoptionPlan()
    services: dict[str, dict[str, Any]] = {}
    for service_name in (head_service_name(name), serve_service_name(name)):
        try:
            services[service_name] = api_client.sanitize_for_serialization(
                core.read_namespaced_service(service_name, namespace)
            )
        except ApiException as error:
            if not _absent(error):
                raise
    routes: list[tuple[str, str]] = []
    for kind, route_name in (("Gateway", f"{name}-gateway"), ("HTTPRoute", f"{name}-httproute")):
        group, version, plural = _CUSTOM[kind]
        try:
            custom.get_namespaced_custom_object(group, version, namespace, plural, route_name)
            routes.append((kind, route_name))
        except ApiException as error:
            if not _absent(error):
                raise
    plan = adoption_plan(rayservice, clusters, services, routes, owner)
    for patch in plan.patches:
        if patch.kind == "Service":
            core.patch_namespaced_service(patch.name, namespace, patch.patch)
        else:
            group, version, plural = _CUSTOM[patch.kind]
            custom.patch_namespaced_custom_object(group, version, namespace, plural, patch.name, patch.patch)
    return plan


def _read(read: Any, name: str, namespace: str, api_client: client.ApiClient) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = api_client.sanitize_for_serialization(read(name, namespace))
    except ApiException as error:
        if _absent(error):
            return None
        raise
    return found


def _rayjob_leftovers(
    api_client: client.ApiClient, namespace: str, name: str
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, dict[str, Any] | None]:
    """The RayClusters labelled for the RayJob, its submitter Job and its head Service (None: absent)."""
    custom: Any = client.CustomObjectsApi(api_client)
    try:
        clusters = custom.list_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", label_selector=rayjob_leftover_selector(name)
        )["items"]
    except ApiException as error:
        if not _absent(error):  # 404: no RayCluster CRD, so no KubeRay either
            raise
        clusters = []
    batch: Any = client.BatchV1Api(api_client)
    core: Any = client.CoreV1Api(api_client)
    submitter = _read(batch.read_namespaced_job, submitter_job_name(name), namespace, api_client)
    service = _read(core.read_namespaced_service, head_service_name(name), namespace, api_client)
    return list(clusters), submitter, service


def _patch(api_client: client.ApiClient, namespace: str, patch: ObjectPatch) -> None:
    if patch.kind == "RayCluster":
        custom: Any = client.CustomObjectsApi(api_client)
        custom.patch_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", patch.name, patch.patch
        )
    elif patch.kind == "Job":
        batch: Any = client.BatchV1Api(api_client)
        batch.patch_namespaced_job(patch.name, namespace, patch.patch)
    else:
        core: Any = client.CoreV1Api(api_client)
        core.patch_namespaced_service(patch.name, namespace, patch.patch)


def adopt_rayjob_leftovers(
    api_client: client.ApiClient, job: RayJob, owner: dict[str, Any] | None
) -> RayJobAdoptionPlan:
    """Finds what KubeRay left for the RayJob and, unless that is refused, patches it over to raypilot
    (idempotent: adopting again finds the same objects and changes nothing)."""
    namespace, name = job.metadata.namespace, job.metadata.name
    clusters, submitter, service = _rayjob_leftovers(api_client, namespace, name)
    plan = rayjob_adoption_plan(job, clusters, submitter, service, owner)
    if plan.refusal is None:
        for patch in plan.patches:
            _patch(api_client, namespace, patch)
    return plan


def rayjob_unadopted_leftovers(api_client: client.ApiClient, namespace: str, name: str) -> list[str]:
    """`Kind/name` of what KubeRay made for the RayJob and nobody adopted (none: a plain apply may run it)."""
    clusters, submitter, service = _rayjob_leftovers(api_client, namespace, name)
    objects = [{**c, "kind": "RayCluster"} for c in clusters]
    objects += [
        {**o, "kind": kind} for kind, o in (("Job", submitter), ("Service", service)) if o is not None
    ]
    return unadopted_leftovers(objects)
