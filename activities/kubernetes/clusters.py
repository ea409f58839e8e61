"""Kubernetes activities for RayClusters and Services: one API act each, idempotent, errors classified.

All are synchronous (the official client blocks) and run on the worker's thread pool. Creates return the
existing object when it is there already; deletes of absent objects succeed (False); read-modify-write updates
retry 409 conflicts on a fresh read and write only the spec and the metadata raypilot owns, never status.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.errors import LEFTOVER_OF_EARLIER_RUN, classify_status, retry_after_seconds
from activities.kubernetes.client import KubeObjects, kubernetes_errors
from activities.kubernetes.event_body import event_body
from activities.kubernetes.resources import (
    ENDPOINT_SLICE,
    EVENT,
    RAYCLUSTER,
    SERVICE,
    Resource,
    Trim,
    trim_object,
)
from models.base import INT32_MAX
from models.naming import is_owned_by_this_rayjob
from wire import stubs
from wire.kubernetes import (
    CreateObject,
    DeleteObject,
    ListObjects,
    ObjectKey,
    RecordEvent,
    ServiceEndpoints,
    UpdateSpec,
)
from wire.stubs.common import implements

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

# Service spec fields the API server allocates and then refuses to change.
_ALLOCATED_SERVICE_FIELDS = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")


def prepare_create_body(resource: Resource, request: CreateObject) -> dict[str, Any]:
    """The body with apiVersion/kind filled in, ownership labels and the workflow annotation merged in
    (they win over the body's own values), and the owner reference appended once."""
    body = copy.deepcopy(request.body)
    body.setdefault("apiVersion", resource.api_version)
    body.setdefault("kind", resource.kind)
    metadata = body.setdefault("metadata", {})
    if request.ownership is not None:
        metadata["labels"] = {**(metadata.get("labels") or {}), **request.ownership.labels()}
        metadata["annotations"] = {**(metadata.get("annotations") or {}), **request.ownership.annotations()}
    if request.owner is not None:
        references = list(metadata.get("ownerReferences") or [])
        if all(ref.get("uid") != request.owner.uid for ref in references):
            references.append(request.owner.to_json())
        metadata["ownerReferences"] = references
    return body


def is_leftover(existing: dict[str, Any], request: CreateObject) -> bool:
    """Whether the object found under the name a RayJob run creates belongs to an earlier run of that
    RayJob (only creates that name their instance are checked; a RayService adopts what it finds)."""
    uid = request.ownership.rayjob_uid if request.ownership is not None else ""
    if not uid:
        return False
    return not is_owned_by_this_rayjob((existing.get("metadata") or {}).get("annotations"), uid)


def merge_string_map(current: dict[str, str] | None, changes: dict[str, str | None]) -> dict[str, str]:
    """Labels/annotations after applying `changes` (None removes a key)."""
    merged = dict(current or {})
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def with_spec(
    current: dict[str, Any], request: UpdateSpec, keep_fields: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`current` with the requested spec and metadata changes. Fields in `keep_fields` absent from the
    requested spec keep their current values (allocated, immutable fields)."""
    updated = copy.deepcopy(current)
    spec = copy.deepcopy(request.spec)
    for key in keep_fields:
        if key not in spec and key in (current.get("spec") or {}):
            spec[key] = copy.deepcopy(current["spec"][key])
    updated["spec"] = spec
    metadata = updated.setdefault("metadata", {})
    if request.labels:
        metadata["labels"] = merge_string_map(metadata.get("labels"), request.labels)
    if request.annotations:
        metadata["annotations"] = merge_string_map(metadata.get("annotations"), request.annotations)
    return updated


# An act's Event: tries in all for a failure a retry may mend, and the first pause between them (doubling,
# at most 2 s each, or the Retry-After the API server asked for).
EVENT_POST_ATTEMPTS = 4
EVENT_POST_BACKOFF_S = 0.2


def _worth_retrying(error: Exception) -> bool:
    status = error.status if isinstance(error, ApiException) else 0  # 0: no answer
    return classify_status("kubernetes", status).retryable


def _pause_before_retry(error: Exception, attempt: int) -> float:
    asked = retry_after_seconds(error.headers, error.body) if isinstance(error, ApiException) else None
    return min(asked if asked is not None else EVENT_POST_BACKOFF_S * 2 ** (attempt - 1), 2.0)


class KubernetesActivityBase:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    @property
    def kube(self) -> KubeObjects:
        return self.dependencies.kube()

    def _create(self, resource: Resource, request: CreateObject) -> dict[str, Any]:
        body = prepare_create_body(resource, request)
        metadata = body["metadata"]
        described = resource.describe(metadata.get("namespace"), metadata.get("name"))
        with kubernetes_errors(f"create {described}"):
            obj, created = self.kube.create(resource, body)
            if not created and is_leftover(obj, request):
                self._delete_leftover(resource, obj, described)
        activity.logger.info(
            "%s %s/%s", "created" if created else "found existing", resource.kind, metadata.get("name")
        )
        self._post_act_event(request.event)
        return obj

    def _delete_leftover(self, resource: Resource, leftover: dict[str, Any], described: str) -> None:
        """Deletes an earlier run's object of the name this run wants, then fails retryably: the next
        attempt creates this run's own object once the leftover is gone."""
        metadata = leftover.get("metadata") or {}
        if not metadata.get("deletionTimestamp"):
            self.kube.delete(
                resource, metadata.get("namespace"), metadata["name"], "Background", metadata.get("uid")
            )
            activity.logger.info("deleting the leftover %s of an earlier run", described)
        raise ApplicationError(
            f"waiting for the leftover {described} of an earlier run to be deleted",
            type=LEFTOVER_OF_EARLIER_RUN,
        )

    def _get_trimmed(
        self, resource: Resource, key: ObjectKey, trim: Trim = trim_object
    ) -> dict[str, Any] | None:
        """The object as history is to carry it, or None when there is none."""
        with kubernetes_errors(f"get {resource.describe(key.namespace, key.name)}"):
            found = self.kube.get(resource, key.namespace, key.name)
        return trim(found) if found is not None else None

    def _delete(self, resource: Resource, request: DeleteObject) -> bool:
        with kubernetes_errors(f"delete {resource.describe(request.namespace, request.name)}"):
            deleted = self.kube.delete(
                resource, request.namespace, request.name, request.propagation, request.uid
            )
        activity.logger.info(
            "%s %s/%s", "deleting" if deleted else "already gone:", resource.kind, request.name
        )
        if deleted:
            self._post_act_event(request.event)
        return deleted

    def _post_act_event(self, event: RecordEvent | None) -> None:
        """Posts the Event the workflow sent with a successful act (CreatedRayCluster with the create), so
        that it costs no activity of its own: best effort, as KubeRay's recorder, so a failure is logged and
        never fails the act, which is done. A failure a retry may mend (5xx, 429, no answer) is tried again
        a few times within the activity, as the Event's own activity was retried before. Its name is the
        workflow's deterministic one: a retried act finds the Event its earlier attempt posted instead of
        adding a second one."""
        if event is None:
            return
        for attempt in range(1, EVENT_POST_ATTEMPTS + 1):
            try:
                self.kube.create(EVENT, event_body(event, datetime.now(UTC)))
                return
            except Exception as error:
                # Whatever the API or the network raised: the act is done, a missing Event the lesser harm.
                if attempt == EVENT_POST_ATTEMPTS or not _worth_retrying(error):
                    activity.logger.warning("could not record event %s: %s", event.reason, error)
                    return
                time.sleep(_pause_before_retry(error, attempt))

    def _update_spec_trimmed(
        self, resource: Resource, request: UpdateSpec, keep_fields: tuple[str, ...] = ()
    ) -> dict[str, Any] | None:
        """The object after the spec update, trimmed; None when it is gone."""

        def mutate(current: dict[str, Any]) -> dict[str, Any] | None:
            updated = with_spec(current, request, keep_fields)
            return None if updated == current else updated

        with kubernetes_errors(f"update {resource.describe(request.namespace, request.name)}"):
            updated = self.kube.update_with_retry(resource, request.namespace, request.name, mutate)
        return trim_object(updated) if updated is not None else None


class RayClusterActivities(KubernetesActivityBase):
    @implements(stubs.create_raycluster)
    def create_raycluster(self, request: CreateObject) -> dict[str, Any]:
        """Create the RayCluster (or return the existing one of that name)."""
        return trim_object(self._create(RAYCLUSTER, request))

    @implements(stubs.get_raycluster)
    def get_raycluster(self, key: ObjectKey) -> dict[str, Any] | None:
        return self._get_trimmed(RAYCLUSTER, key)

    @implements(stubs.update_raycluster_spec)
    def update_raycluster_spec(self, request: UpdateSpec) -> dict[str, Any] | None:
        """In-place update: the spec replaced, labels/annotations merged; None when the cluster is gone."""
        return self._update_spec_trimmed(RAYCLUSTER, request)

    @implements(stubs.suspend_worker_groups)
    def suspend_worker_groups(self, key: ObjectKey) -> dict[str, Any] | None:
        """`suspend: true` on every worker group (the DeleteWorkers deletion policy); None when gone."""

        def mutate(current: dict[str, Any]) -> dict[str, Any] | None:
            groups = (current.get("spec") or {}).get("workerGroupSpecs") or []
            if all(group.get("suspend") is True for group in groups):
                return None
            updated = copy.deepcopy(current)
            for group in updated["spec"]["workerGroupSpecs"]:
                group["suspend"] = True
            return updated

        with kubernetes_errors(f"suspend worker groups of {RAYCLUSTER.describe(key.namespace, key.name)}"):
            updated = self.kube.update_with_retry(RAYCLUSTER, key.namespace, key.name, mutate)
        return trim_object(updated) if updated is not None else None

    @implements(stubs.delete_raycluster)
    def delete_raycluster(self, request: DeleteObject) -> bool:
        return self._delete(RAYCLUSTER, request)

    @implements(stubs.list_rayclusters)
    def list_rayclusters(self, request: ListObjects) -> list[dict[str, Any]]:
        """The RayClusters matching the label selector: metadata and status (no spec, to stay small)."""
        with kubernetes_errors(f"list {RAYCLUSTER.describe(request.namespace)}"):
            found = self.kube.list(RAYCLUSTER, request.namespace, request.label_selector or None)
        return [trim_object(cluster, spec=False) for cluster in found]


class ServiceActivities(KubernetesActivityBase):
    @implements(stubs.create_service)
    def create_service(self, request: CreateObject) -> dict[str, Any]:
        return trim_object(self._create(SERVICE, request))

    @implements(stubs.get_service)
    def get_service(self, key: ObjectKey) -> dict[str, Any] | None:
        return self._get_trimmed(SERVICE, key)

    @implements(stubs.update_service_spec)
    def update_service_spec(self, request: UpdateSpec) -> dict[str, Any] | None:
        """Replace the Service's spec (e.g. switch its selector to another RayCluster), keeping the cluster
        IPs the API server allocated; None when the Service is gone."""
        return self._update_spec_trimmed(SERVICE, request, _ALLOCATED_SERVICE_FIELDS)

    @implements(stubs.delete_service)
    def delete_service(self, request: DeleteObject) -> bool:
        return self._delete(SERVICE, request)

    @implements(stubs.count_ready_endpoints)
    def count_ready_endpoints(self, request: ServiceEndpoints) -> int:
        """numServeEndpoints: the ready Pods behind the Service's EndpointSlices, counted as KubeRay does."""
        selector = f"kubernetes.io/service-name={request.service_name}"
        with kubernetes_errors(f"list {ENDPOINT_SLICE.describe(request.namespace)}"):
            slices = self.kube.list(ENDPOINT_SLICE, request.namespace, selector)
        return count_ready_serve_endpoints(slices)


def count_ready_serve_endpoints(endpoint_slices: Iterable[Mapping[str, Any]]) -> int:
    """numServeEndpoints as KubeRay counts it (calculateNumServeEndpointsFromSlices): the distinct Pods
    (`targetRef.uid`) whose endpoint is `ready: true` in the EndpointSlices of one Service.

    A dual-stack cluster lists a Pod once per IP family (one slice each), so Pods are counted, not addresses.
    Endpoints without a targetRef uid, or whose `ready` is unset, are not counted, as in KubeRay. Raises
    OverflowError past int32 (KubeRay's error).
    """
    ready_pods: set[str] = set()
    for endpoint_slice in endpoint_slices:
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is not True:
                continue
            uid = (endpoint.get("targetRef") or {}).get("uid") or ""
            if uid:
                ready_pods.add(uid)
    if len(ready_pods) > INT32_MAX:
        raise OverflowError("numServeEndpoints exceeds math.MaxInt32")
    return len(ready_pods)
