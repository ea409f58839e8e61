"""The controller remembers an object it saw deleted with `--cascade=orphan`: Kubernetes' `orphan` finalizer
may be gone again (the garbage collector done) by the time the object is reconciled."""

from __future__ import annotations

from typing import Any

from models.features import FeatureGates
from raypilot.controller.decide import FINALIZER
from raypilot.controller.loop import Controller


def rayservice(*finalizers: str, deleting: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "svc", "namespace": "ns", "uid": "uid-1", "finalizers": list(finalizers)}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T01:00:00Z"
    return {"apiVersion": "raypilot.io/v1", "kind": "RayService", "metadata": meta}


def controller() -> Controller:
    return Controller(kube=None, temporal=None, gates=FeatureGates(), status_interval=1.0)  # type: ignore[arg-type]


def test_an_orphaning_deletion_is_remembered_until_the_object_is_gone() -> None:
    seen = controller()
    seen._seen("MODIFIED", rayservice(FINALIZER))
    assert seen.orphan_deletions == set()
    seen._seen("MODIFIED", rayservice(FINALIZER, "orphan"))
    seen._seen("MODIFIED", rayservice(FINALIZER))  # the garbage collector took its finalizer off
    assert seen.orphan_deletions == {"uid-1"}
    seen._seen("DELETED", rayservice())
    assert seen.orphan_deletions == set()


def test_an_orphan_finalizer_on_a_live_object_is_no_deletion() -> None:
    seen = controller()
    seen._seen("MODIFIED", rayservice(FINALIZER, "orphan", deleting=False))
    assert seen.orphan_deletions == set()
