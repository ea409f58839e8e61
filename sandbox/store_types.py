"""Which kinds the sandbox Store serves: those built in (`SERVED_TYPES`), and those of the CRDs created in it
(served while their CRD exists). A base of `Store` (through `StoreWatches`): these methods are the Store's,
moved here unchanged.
"""

from __future__ import annotations

from typing import Any

from sandbox.resources import SERVED_TYPES, ResourceType
from sandbox.store_crds import served_types
from sandbox.store_errors import ApiError
from sandbox.store_gc import GarbageCollector

_Key = tuple[str, str]  # (namespace or "", name), as in sandbox/store.py


class StoreTypes:
    # Set by Store.__init__.
    types: tuple[ResourceType, ...]
    _by_kind: dict[tuple[str, str], ResourceType]
    _by_plural: dict[tuple[str, str, str], ResourceType]
    _objects: dict[ResourceType, dict[_Key, dict[str, Any]]]
    _gc: GarbageCollector

    # ---- types -------------------------------------------------------------------------------------------
    def resource_type(self, api_version: str, kind: str) -> ResourceType:
        try:
            return self._by_kind[(api_version, kind)]
        except KeyError:
            raise ApiError(
                404,
                "NotFound",
                f"the server could not find the requested resource "
                f'(kind "{kind}" in version "{api_version}")',
            ) from None

    def resource_type_for_plural(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_plural.get((group, version, plural))

    def _serve_definition(self, crd: dict[str, Any]) -> None:
        """Serve the kinds of a created CRD. A kind served already stays as it is: one the sandbox serves
        built in (KubeRay's CRDs applied here), or one whose CRD changed (a new version is served; a changed
        schema or printer column of a served one is not taken in, a simplification of the sandbox)."""
        for rt in served_types(crd):
            if (rt.group, rt.version, rt.plural) in self._by_plural:
                continue
            self.types = (*self.types, rt)
            self._by_kind[(rt.api_version, rt.kind)] = rt
            self._by_plural[(rt.group, rt.version, rt.plural)] = rt
            self._objects[rt] = {}

    def _withdraw_definition(self, crd: dict[str, Any]) -> None:
        """A deleted CRD: its objects are deleted (DELETED events for watchers), its kinds not served."""
        for served in served_types(crd):
            rt = self._by_plural.get((served.group, served.version, served.plural))
            if rt is None or rt in SERVED_TYPES:
                continue
            for key in sorted(self._objects[rt]):
                self._gc.remove(rt, key)
            self.types = tuple(t for t in self.types if t != rt)
            del self._by_kind[(rt.api_version, rt.kind)], self._by_plural[(rt.group, rt.version, rt.plural)]
            del self._objects[rt]
