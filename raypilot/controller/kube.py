"""The controller's Kubernetes I/O: list and watch raypilot.io objects, finalizers, the applied-generation
annotation, the status subresource and Warning Events (the official client, blocking: called in threads)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from models.crd import RAYPILOT_GROUP, RAYPILOT_VERSION, plural_of
from raypilot.controller.decide import ANNOTATION_APPLIED_GENERATION, FINALIZER

WATCH_TIMEOUT_SECONDS = 300
EVENT_SOURCE = "raypilot-controller"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ControllerKube:
    def __init__(self, api_client: client.ApiClient) -> None:
        self.api_client = api_client
        # Typed as Any: the client's stubs want its model classes, the controller speaks plain JSON dicts.
        self.custom: Any = client.CustomObjectsApi(api_client)
        self.core: Any = client.CoreV1Api(api_client)

    def list(self, kind: str) -> tuple[list[dict[str, Any]], str]:
        listed = self.custom.list_cluster_custom_object(RAYPILOT_GROUP, RAYPILOT_VERSION, plural_of(kind))
        return list(listed.get("items") or []), str(listed["metadata"].get("resourceVersion") or "")

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = self.custom.get_namespaced_custom_object(
                RAYPILOT_GROUP, RAYPILOT_VERSION, namespace, plural_of(kind), name
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    def watch(self, kind: str, resource_version: str, stop: Callable[[], bool]) -> Iterator[dict[str, Any]]:
        """Watch events from `resource_version` until the server ends the watch (or `stop()`)."""
        stream = watch.Watch()
        try:
            for event in stream.stream(
                self.custom.list_cluster_custom_object,
                RAYPILOT_GROUP,
                RAYPILOT_VERSION,
                plural_of(kind),
                resource_version=resource_version,
                timeout_seconds=WATCH_TIMEOUT_SECONDS,
                allow_watch_bookmarks=False,
            ):
                if stop():
                    return
                yield event
        finally:
            stream.stop()

    def _patch(self, obj: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        patched: dict[str, Any] = self.custom.patch_namespaced_custom_object(
            RAYPILOT_GROUP, RAYPILOT_VERSION, meta["namespace"], plural_of(obj["kind"]), meta["name"], body
        )
        return patched

    def add_finalizer(self, obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj["metadata"]
        finalizers = [*(meta.get("finalizers") or []), FINALIZER]
        # The resourceVersion makes it a precondition: a concurrent writer's finalizers are never dropped.
        return self._patch(
            obj, {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        )

    def remove_finalizer(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        body = {"metadata": {"finalizers": finalizers or None, "resourceVersion": meta["resourceVersion"]}}
        with contextlib.suppress(ApiException):  # gone already, or changed: the next event decides again
            self._patch(obj, body)

    def set_applied_generation(self, obj: dict[str, Any], generation: int) -> None:
        value = f"{obj['metadata']['uid']}/{generation}"
        self._patch(obj, {"metadata": {"annotations": {ANNOTATION_APPLIED_GENERATION: value}}})

    def patch_status(self, obj: dict[str, Any], patch: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.custom.patch_namespaced_custom_object_status(
            RAYPILOT_GROUP, RAYPILOT_VERSION, meta["namespace"], plural_of(obj["kind"]), meta["name"], patch
        )

    def warning_event(self, obj: dict[str, Any], reason: str, message: str) -> None:
        meta = obj["metadata"]
        timestamp = now_rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
            "involvedObject": {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "name": meta["name"],
                "namespace": meta["namespace"],
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": "Warning",
            "count": 1,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "source": {"component": EVENT_SOURCE},
            "reportingComponent": EVENT_SOURCE,
        }
        self.core.create_namespaced_event(meta["namespace"], body)
