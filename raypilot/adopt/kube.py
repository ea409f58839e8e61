"""Adopting a RayService's KubeRay leftovers, and finding a RayJob's (refused: raypilot.adopt.rayjob), through
the Kubernetes API (blocking: called in a thread)."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from models.naming import head_service_name, serve_service_name
from models.rayservice import RayService
from raypilot.adopt.plan import AdoptionPlan, adoption_plan, leftover_selector
from raypilot.adopt.rayjob import kuberay_leftover_clusters, rayjob_leftover_selector

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


def rayjob_leftover_clusters(
    api_client: client.ApiClient, namespace: str, name: str, owner_uid: str
) -> list[str]:
    """The RayClusters KubeRay left for the RayJob `name` (none: nothing stands in the way of a first run)."""
    custom: Any = client.CustomObjectsApi(api_client)
    clusters = custom.list_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", label_selector=rayjob_leftover_selector(name)
    )["items"]
    return kuberay_leftover_clusters(clusters, owner_uid)
