"""The in-memory object store behind the sandbox API server.

Objects are plain dicts in Kubernetes JSON shape. Controllers use the store directly from the event loop (no
threads, no locks needed: every method runs to completion without awaiting), and follow changes with
`async for event in store.watch(...)`. Stored dicts are never mutated in place; every read returns a deep
copy.
"""

from __future__ import annotations

import builtins
import copy
import itertools
import secrets
import string
import uuid
from collections import deque
from typing import Any

from sandbox import patches
from sandbox.netalloc import Pools, standard_pools
from sandbox.resources import SERVED_TYPES, ResourceType
from sandbox.store_admission import (
    InvalidObject,
    default_on_create,
    next_state,
    release_on_delete,
    validate_metadata,
)
from sandbox.store_crds import is_crd
from sandbox.store_errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
    now_rfc3339,
)
from sandbox.store_gc import GarbageCollector
from sandbox.store_watch import Change, StoreWatches, Watcher, WatchEvent

__all__ = ["ApiError", "ResourceType", "Store", "WatchEvent"]

_Key = tuple[str, str]  # (namespace or "", name)
_BUILTIN_GROUPS = frozenset({"", "batch", "discovery.k8s.io"})
_NAME_SUFFIX_CHARS = string.ascii_lowercase + string.digits


class Store(StoreWatches):
    def __init__(
        self,
        pools: Pools | None = None,
        *,
        types: tuple[ResourceType, ...] = SERVED_TYPES,
        history_limit: int = 10_000,
        require_namespaces: bool = True,
        initial_namespaces: tuple[str, ...] = ("default", "kube-system"),
    ) -> None:
        self.pools = pools or standard_pools()
        self.types = types
        self.require_namespaces = require_namespaces
        self._by_kind = {(rt.api_version, rt.kind): rt for rt in types}
        self._by_plural = {(rt.group, rt.version, rt.plural): rt for rt in types}
        self._objects: dict[ResourceType, dict[_Key, dict[str, Any]]] = {rt: {} for rt in types}
        self._revision = itertools.count(1)
        self._current_rv = 0
        self._history: deque[Change] = deque()
        self._history_limit = history_limit
        self._compacted_rv = 0  # watches from a resourceVersion older than this get 410 Expired
        self._watchers: set[Watcher] = set()
        self._applied: dict[str, dict[str, Any]] = {}  # uid -> field manager -> last applied configuration
        self._gc = GarbageCollector(self)
        for namespace in initial_namespaces:
            self.create("v1", "Namespace", {"metadata": {"name": namespace}})

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion handed out: what a list returns as metadata.resourceVersion."""
        return str(self._current_rv)

    # ---- reads -------------------------------------------------------------------------------------------
    def _key(self, rt: ResourceType, namespace: str | None, name: str) -> _Key:
        return ((namespace or "default") if rt.namespaced else "", name)

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        rt = self.resource_type(api_version, kind)
        obj = self._objects[rt].get(self._key(rt, namespace, name))
        if obj is None:
            raise not_found(rt, name)
        return copy.deepcopy(obj)

    def try_get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        rt = self.resource_type(api_version, kind)
        obj = self._objects[rt].get(self._key(rt, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        return copy.deepcopy(self.read_list(api_version, kind, namespace, label_selector, field_selector))

    def read_list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> builtins.list[dict[str, Any]]:
        """As `list`, but the stored objects themselves, not copies: for the sandbox's own controllers,
        which only read them. A write never changes a stored object in place (it stores a new one), so what
        a reader holds stays as it was read. Copying every Pod and Service on each resync of the network
        controllers was most of the sandbox's CPU with a hundred RayClusters."""
        rt = self.resource_type(api_version, kind)
        selects = Watcher.for_selectors(
            rt, namespace if rt.namespaced else None, label_selector, field_selector
        )
        return [obj for key, obj in sorted(self._objects[rt].items()) if selects.selects(obj)]

    # ---- writes ------------------------------------------------------------------------------------------
    def create(self, api_version: str, kind: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store a new object. `status` is kept as given (the HTTP layer drops it for status subresources)."""
        rt = self.resource_type(api_version, kind)
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata", {}), dict):
            raise bad_request("the object must be a JSON object with a metadata object")
        new = copy.deepcopy(obj)
        meta = new.setdefault("metadata", {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise invalid(rt, "", "metadata.name: Required value: name or generateName is required")
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice(_NAME_SUFFIX_CHARS) for _ in range(5)
            )
        if rt.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
            self._check_namespace_accepts(meta["namespace"])
        else:
            meta.pop("namespace", None)
        try:
            validate_metadata(rt, meta)
        except InvalidObject as exc:
            raise invalid(rt, meta["name"], str(exc)) from None
        key = self._key(rt, meta.get("namespace"), meta["name"])
        if key in self._objects[rt]:
            raise already_exists(rt, meta["name"])
        new["apiVersion"], new["kind"] = rt.api_version, rt.kind
        for server_field in ("deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"):
            meta.pop(server_field, None)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1)
        try:
            default_on_create(rt, new, self.pools.services)
        except InvalidObject as exc:
            raise invalid(rt, meta["name"], str(exc)) from None
        meta["resourceVersion"] = self._next_rv()
        self._objects[rt][key] = new
        self._gc.track(rt, new)
        self._record(rt, "ADDED", new, None)
        return copy.deepcopy(new)

    def update(
        self, api_version: str, kind: str, obj: dict[str, Any], *, status: bool = False
    ) -> dict[str, Any]:
        """Replace an object (or, with status=True, only its .status). A metadata.resourceVersion in `obj`
        must be the current one (optimistic concurrency), else 409 Conflict."""
        rt = self.resource_type(api_version, kind)
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(meta, dict) or not meta.get("name"):
            raise bad_request("metadata.name is required for an update")
        key = self._key(rt, meta.get("namespace"), meta["name"])
        current = self._objects[rt].get(key)
        if current is None:
            raise not_found(rt, meta["name"])
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
            raise conflict(rt, meta["name"])
        return self._write(rt, key, obj, status=status)

    def patch(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str,
        *,
        status: bool = False,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Patch with one of patches.PATCH_TYPES. Server-side apply (application/apply-patch+yaml) creates the
        object when it is absent, and removes fields field_manager applied before but no longer applies.
        A metadata.resourceVersion in the patch is a precondition (409 if stale)."""
        rt = self.resource_type(api_version, kind)
        if patch_type == patches.STRATEGIC_MERGE_PATCH and rt.group not in _BUILTIN_GROUPS:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{patches.JSON_PATCH}, {patches.MERGE_PATCH}, {patches.APPLY_PATCH}",
            )
        if patch_type not in patches.PATCH_TYPES:
            raise ApiError(415, "UnsupportedMediaType", f"unsupported patch type {patch_type!r}")
        key = self._key(rt, namespace, name)
        current = self._objects[rt].get(key)
        if current is None:
            if patch_type != patches.APPLY_PATCH or status:
                raise not_found(rt, name)
            created = self._create_from_apply(rt, namespace, name, patch)
            self._remember_applied(created, field_manager, patch)
            return created
        uid = current["metadata"]["uid"]
        previous = self._applied.get(uid, {}).get(field_manager or "") if not status else None
        try:
            patched = patches.apply_patch_of_type(current, patch, patch_type, previous)
        except patches.PatchError as exc:
            raise invalid(rt, name, str(exc)) from None
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
            raise invalid(rt, name, "the patched object has no metadata")
        patched_meta = patched["metadata"]
        if patched_meta.get("name") != name or (rt.namespaced and patched_meta.get("namespace") != key[0]):
            raise bad_request("the name and namespace of an object cannot be changed by a patch")
        wanted_rv = patched_meta.get("resourceVersion")
        if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
            raise conflict(rt, name)
        written = self._write(rt, key, patched, status=status)
        if patch_type == patches.APPLY_PATCH and not status:
            self._remember_applied(written, field_manager, patch)
        return written

    def _remember_applied(self, obj: dict[str, Any], field_manager: str | None, applied: Any) -> None:
        """What each field manager last applied: the fields it owns (a simplified managedFields)."""
        self._applied.setdefault(obj["metadata"]["uid"], {})[field_manager or ""] = copy.deepcopy(applied)

    def _create_from_apply(
        self, rt: ResourceType, namespace: str | None, name: str, applied: Any
    ) -> dict[str, Any]:
        if not isinstance(applied, dict):
            raise bad_request("the applied configuration must be an object")
        obj = patches.apply_patch({}, applied)
        meta = obj.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise bad_request("the name of the applied object does not match the request")
        meta["name"] = name
        if rt.namespaced:
            meta["namespace"] = namespace or "default"
        if "status" in rt.subresources:
            obj.pop("status", None)
        return self.create(rt.api_version, rt.kind, obj)

    def delete(
        self,
        api_version: str,
        kind: str,
        namespace: str | None,
        name: str,
        propagation: str = "Background",
    ) -> dict[str, Any] | None:
        """Delete an object. Returns it (with deletionTimestamp) while finalizers or foreground deletion
        keep it, None once it is gone.

        propagation: Background | Foreground | Orphan (what happens to dependents by ownerReferences)."""
        rt = self.resource_type(api_version, kind)
        if propagation not in ("Background", "Foreground", "Orphan"):
            raise bad_request(f"unsupported propagationPolicy {propagation!r}")
        key = self._key(rt, namespace, name)
        if key not in self._objects[rt]:
            raise not_found(rt, name)
        if rt.kind == "Namespace" and rt.group == "" and name in ("default", "kube-system", "kube-public"):
            raise ApiError(
                403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
        self._gc.delete(rt, key, propagation)
        remaining = self._objects[rt].get(key)
        return copy.deepcopy(remaining) if remaining is not None else None

    def delete_collection(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation: str = "Background",
    ) -> builtins.list[dict[str, Any]]:
        """Delete every matching object; returns them as they were just before deletion."""
        victims = self.list(api_version, kind, namespace, label_selector, field_selector)
        for obj in victims:
            meta = obj["metadata"]
            if self.try_get(api_version, kind, meta.get("namespace"), meta["name"]) is not None:
                self.delete(api_version, kind, meta.get("namespace"), meta["name"], propagation)
        return victims

    # ---- internals shared with the garbage collector ---------------------------------------------------
    def _next_rv(self) -> str:
        self._current_rv = next(self._revision)
        return str(self._current_rv)

    def _record(
        self, rt: ResourceType, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if is_crd(rt):
            if event_type == "DELETED":
                self._withdraw_definition(obj)
            else:
                self._serve_definition(obj)
        change = Change(int(obj["metadata"]["resourceVersion"]), rt, event_type, obj, old)
        self._history.append(change)
        while len(self._history) > self._history_limit:
            self._compacted_rv = self._history.popleft().resource_version
        for watcher in self._watchers:
            event = watcher.translate(change)
            if event is not None:
                watcher.queue.put_nowait(event)

    def _write(self, rt: ResourceType, key: _Key, desired: dict[str, Any], *, status: bool) -> dict[str, Any]:
        current = self._objects[rt][key]
        try:
            new = next_state(rt, current, desired, status=status)
        except InvalidObject as exc:
            raise invalid(rt, key[1], str(exc)) from None
        if new == current:
            return copy.deepcopy(current)
        new["metadata"]["resourceVersion"] = self._next_rv()
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            self._objects[rt][key] = new
            self._gc.remove(rt, key)
            return copy.deepcopy(new)
        self._objects[rt][key] = new
        self._gc.track(rt, new)
        self._record(rt, "MODIFIED", new, current)
        return copy.deepcopy(new)

    def _check_namespace_accepts(self, namespace: str) -> None:
        if not self.require_namespaces:
            return
        ns_type = self._by_kind.get(("v1", "Namespace"))
        if ns_type is None:
            return
        ns = self._objects[ns_type].get(("", namespace))
        if ns is None:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
        if ns["metadata"].get("deletionTimestamp"):
            raise ApiError(
                403,
                "Forbidden",
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )

    def _release(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        release_on_delete(rt, obj, self.pools.services)
        self._applied.pop(obj["metadata"]["uid"], None)
