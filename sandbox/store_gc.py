"""Deletion semantics of the store: finalizers, ownerReference garbage collection, namespace termination.

Kubernetes does garbage collection in a separate controller, a moment after the delete; here it happens
synchronously inside the delete call, so dependents are gone (or marked for deletion) when it returns.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from sandbox.resources import ResourceType
from sandbox.store_errors import now_rfc3339

_Key = tuple[str, str]


class CollectedStore(Protocol):
    """What the collector uses of the store it belongs to (the store's own internals: the collector is a part
    of it kept in a file of its own; a protocol, so that this module does not import the store back)."""

    _objects: dict[ResourceType, dict[_Key, dict[str, Any]]]

    def _next_rv(self) -> str: ...

    def _record(
        self, rt: ResourceType, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None: ...

    def _release(self, rt: ResourceType, obj: dict[str, Any]) -> None: ...


FOREGROUND_FINALIZER = "foregroundDeletion"


def _owner_uids(obj: dict[str, Any]) -> list[str]:
    return [ref.get("uid", "") for ref in obj["metadata"].get("ownerReferences") or []]


def _is_namespace(rt: ResourceType) -> bool:
    return rt.group == "" and rt.kind == "Namespace"


class GarbageCollector:
    def __init__(self, store: CollectedStore) -> None:
        self._store = store
        self._by_uid: dict[str, tuple[ResourceType, _Key]] = {}
        # owner uid -> its dependents, and back: deletes stay O(dependents) instead of O(all objects)
        self._dependents_of: dict[str, set[tuple[ResourceType, _Key]]] = {}
        self._owners_of: dict[tuple[ResourceType, _Key], set[str]] = {}

    def track(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """Index a stored object (after every create and write)."""
        meta = obj["metadata"]
        ref = (rt, (meta.get("namespace", ""), meta["name"]))
        self._by_uid[meta["uid"]] = ref
        self._untrack_owners(ref)
        owners = set(_owner_uids(obj))
        if owners:
            self._owners_of[ref] = owners
            for owner in owners:
                self._dependents_of.setdefault(owner, set()).add(ref)

    def _untrack_owners(self, ref: tuple[ResourceType, _Key]) -> None:
        for owner in self._owners_of.pop(ref, set()):
            dependents = self._dependents_of.get(owner)
            if dependents is not None:
                dependents.discard(ref)
                if not dependents:
                    del self._dependents_of[owner]

    def _exists(self, uid: str) -> bool:
        entry = self._by_uid.get(uid)
        return entry is not None and entry[1] in self._store._objects[entry[0]]

    def _dependents(self, uid: str) -> list[tuple[ResourceType, _Key, dict[str, Any]]]:
        found = []
        for rt, key in sorted(self._dependents_of.get(uid, ()), key=lambda ref: (ref[0].plural, ref[1])):
            obj = self._store._objects[rt].get(key)
            if obj is not None:
                found.append((rt, key, obj))
        return found

    def _replace(self, rt: ResourceType, key: _Key, new: dict[str, Any]) -> None:
        old = self._store._objects[rt][key]
        new["metadata"]["resourceVersion"] = self._store._next_rv()
        self._store._objects[rt][key] = new
        self.track(rt, new)
        self._store._record(rt, "MODIFIED", new, old)

    # ---- delete ------------------------------------------------------------------------------------------
    def delete(self, rt: ResourceType, key: _Key, propagation: str) -> None:
        obj = self._store._objects[rt][key]
        uid = obj["metadata"]["uid"]
        if propagation == "Orphan":
            self._orphan_dependents(uid)
        if _is_namespace(rt):
            self._terminate_namespace(key)
            return
        finalizers = list(obj["metadata"].get("finalizers") or [])
        foreground = propagation == "Foreground" and bool(self._dependents(uid))
        if foreground and FOREGROUND_FINALIZER not in finalizers:
            finalizers.append(FOREGROUND_FINALIZER)
        if not finalizers:
            self.remove(rt, key)
            return
        self._mark_deleting(rt, key, finalizers)
        if foreground:
            for dep_rt, dep_key, dep in self._dependents(uid):
                if not dep["metadata"].get("deletionTimestamp"):
                    self.delete(dep_rt, dep_key, "Background")
            self._finish_foreground(uid)

    def _mark_deleting(
        self, rt: ResourceType, key: _Key, finalizers: list[str], status: dict[str, Any] | None = None
    ) -> None:
        current = self._store._objects[rt][key]
        new = copy.deepcopy(current)
        meta = new["metadata"]
        meta.setdefault("deletionTimestamp", now_rfc3339())
        meta.setdefault("deletionGracePeriodSeconds", 0)
        if finalizers:
            meta["finalizers"] = finalizers
        if status is not None:
            new["status"] = status
        if new != current:
            self._replace(rt, key, new)

    def _orphan_dependents(self, uid: str) -> None:
        for rt, key, dep in self._dependents(uid):
            new = copy.deepcopy(dep)
            refs = [ref for ref in new["metadata"]["ownerReferences"] if ref.get("uid") != uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                del new["metadata"]["ownerReferences"]
            self._replace(rt, key, new)

    def remove(self, rt: ResourceType, key: _Key) -> None:
        """The object is gone for good: DELETED event, then what its disappearance triggers."""
        obj = copy.deepcopy(self._store._objects[rt].pop(key))
        uid = obj["metadata"]["uid"]
        self._by_uid.pop(uid, None)
        self._untrack_owners((rt, key))
        obj["metadata"]["resourceVersion"] = self._store._next_rv()
        self._store._record(rt, "DELETED", obj, None)
        self._store._release(rt, obj)
        self._collect_dependents(uid)
        for owner_uid in _owner_uids(obj):
            self._finish_foreground(owner_uid)
        namespace = obj["metadata"].get("namespace")
        if namespace:
            self._finish_namespace(namespace)

    def _collect_dependents(self, uid: str) -> None:
        """Background propagation: a dependent whose owners are all gone is deleted; one with a surviving
        owner only loses the dangling reference."""
        for rt, key, dep in self._dependents(uid):
            if key not in self._store._objects[rt]:
                continue  # removed while collecting an earlier dependent
            others = [owner for owner in _owner_uids(dep) if owner != uid]
            if any(self._exists(owner) for owner in others):
                new = copy.deepcopy(dep)
                new["metadata"]["ownerReferences"] = [
                    ref for ref in new["metadata"]["ownerReferences"] if ref.get("uid") != uid
                ]
                self._replace(rt, key, new)
            elif not dep["metadata"].get("deletionTimestamp"):
                self.delete(rt, key, "Background")

    def _finish_foreground(self, owner_uid: str) -> None:
        """An owner in foreground deletion goes once no dependent with blockOwnerDeletion remains."""
        entry = self._by_uid.get(owner_uid)
        if entry is None or entry[1] not in self._store._objects[entry[0]]:
            return
        rt, key = entry
        owner = self._store._objects[rt][key]
        finalizers = list(owner["metadata"].get("finalizers") or [])
        if FOREGROUND_FINALIZER not in finalizers:
            return
        for _, _, dep in self._dependents(owner_uid):
            refs = dep["metadata"].get("ownerReferences") or []
            if any(ref.get("uid") == owner_uid and ref.get("blockOwnerDeletion") for ref in refs):
                return
        finalizers.remove(FOREGROUND_FINALIZER)
        if finalizers:
            new = copy.deepcopy(owner)
            new["metadata"]["finalizers"] = finalizers
            self._replace(rt, key, new)
        else:
            self.remove(rt, key)

    # ---- namespaces --------------------------------------------------------------------------------------
    def _terminate_namespace(self, key: _Key) -> None:
        ns_type = next(rt for rt in self._store._objects if _is_namespace(rt))
        finalizers = list(self._store._objects[ns_type][key]["metadata"].get("finalizers") or [])
        self._mark_deleting(ns_type, key, finalizers, status={"phase": "Terminating"})
        name = key[1]
        for rt, objects in self._store._objects.items():
            if not rt.namespaced:
                continue
            for obj_key, obj in list(objects.items()):
                if obj_key[0] == name and obj_key in objects and not obj["metadata"].get("deletionTimestamp"):
                    self.delete(rt, obj_key, "Background")
        self._finish_namespace(name)

    def _finish_namespace(self, name: str) -> None:
        ns_type = next((rt for rt in self._store._objects if _is_namespace(rt)), None)
        if ns_type is None:
            return
        ns = self._store._objects[ns_type].get(("", name))
        if ns is None or not ns["metadata"].get("deletionTimestamp") or ns["metadata"].get("finalizers"):
            return
        if any(key[0] == name for rt, objs in self._store._objects.items() if rt.namespaced for key in objs):
            return
        self.remove(ns_type, ("", name))
