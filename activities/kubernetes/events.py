"""Kubernetes Events, cleanup by ownership labels, and the RayJob/RayService resource itself."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException
from temporalio import activity

from activities.kubernetes.client import KubeObjects, kubernetes_errors
from activities.kubernetes.clusters import KubernetesActivityBase
from activities.kubernetes.event_body import event_body
from activities.kubernetes.resources import (
    EVENT,
    RAYJOB,
    RAYPILOT_RAYJOB,
    RAYPILOT_RAYSERVICE,
    RAYSERVICE,
    RESOURCES_BY_KIND,
    object_ref,
)
from models.naming import ownership_label_selector
from wire import stubs
from wire.kubernetes import CreateObject, OwnedObjects, RayResourceKey, RecordEvent
from wire.stubs.common import implements


def labelled_objects(
    kube: KubeObjects, namespace: str, selector: str, kinds: Sequence[str], keep: Collection[str] = ()
) -> list[dict[str, Any]]:
    """Every object of `kinds` (in that order) matching the label selector, except the names in `keep`. A kind
    whose API is not installed (e.g. no Gateway API) has none."""
    found: list[dict[str, Any]] = []
    for kind in kinds:
        try:
            items = kube.list(RESOURCES_BY_KIND[kind], namespace, selector)
        except ApiException as exc:
            if exc.status != 404:
                raise
            continue
        found.extend(item for item in items if item["metadata"]["name"] not in keep)
    return found


def delete_objects(kube: KubeObjects, objects: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Requests each object's deletion (background, preconditioned on its uid); returns the refs of those
    this call deleted (one already gone is not among them)."""
    deleted: list[dict[str, str]] = []
    for obj in objects:
        ref = object_ref(obj)
        resource = RESOURCES_BY_KIND[ref["kind"]]
        if kube.delete(resource, ref["namespace"], ref["name"], "Background", ref["uid"] or None):
            deleted.append(ref)
    return deleted


def _owner(request: OwnedObjects) -> str:
    return f"{request.owner_kind} {request.namespace}/{request.owner_name}"


class EventActivities(KubernetesActivityBase):
    @implements(stubs.record_event)
    def record_event(self, request: RecordEvent) -> str:
        """Create the Event (once: its name is deterministic); returns its name."""
        body = event_body(request, datetime.now(UTC))
        self._create(EVENT, CreateObject(body=body))
        return str(body["metadata"]["name"])


class OwnershipActivities(KubernetesActivityBase):
    def _owned(self, request: OwnedObjects) -> list[dict[str, Any]]:
        selector = ownership_label_selector(request.owner_kind, request.owner_name)
        with kubernetes_errors(f"list the objects of {_owner(request)}"):
            return labelled_objects(self.kube, request.namespace, selector, request.kinds, request.keep)

    @implements(stubs.list_owned_objects)
    def list_owned_objects(self, request: OwnedObjects) -> list[dict[str, str]]:
        """kind/namespace/name/uid of every object with the owner's labels (docs/contract.md §5)."""
        return [object_ref(obj) for obj in self._owned(request)]

    @implements(stubs.delete_owned_objects)
    def delete_owned_objects(self, request: OwnedObjects) -> list[dict[str, str]]:
        """Delete every object with the owner's labels (kinds in the order given; names in `keep` stay);
        returns those whose deletion this call requested."""
        owned = self._owned(request)
        with kubernetes_errors(f"delete the objects of {_owner(request)}"):
            deleted = delete_objects(self.kube, owned)
        activity.logger.info(
            "deleted %d objects of %s %s/%s",
            len(deleted),
            request.owner_kind,
            request.namespace,
            request.owner_name,
        )
        return deleted

    @implements(stubs.delete_ray_resource)
    def delete_ray_resource(self, key: RayResourceKey) -> bool:
        """Delete the RayJob/RayService custom resource itself (the DeleteSelf policy); False when there is
        none (a workflow started from the Temporal CLI has no custom resource)."""
        if key.api_version == RAYPILOT_RAYJOB.api_version:
            resource = RAYPILOT_RAYJOB if key.kind.lower() == "rayjob" else RAYPILOT_RAYSERVICE
        else:
            resource = RAYJOB if key.kind.lower() == "rayjob" else RAYSERVICE
        with kubernetes_errors(f"delete {resource.describe(key.namespace, key.name)}"):
            return self.kube.delete(resource, key.namespace, key.name)
