"""The in-memory Store: metadata, concurrency, patches, deletion semantics, watches."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from sandbox.store import ApiError, Store, WatchEvent


def _cm(name: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "data": {"k": "v"},
        **extra,
    }


def _raycluster(name: str, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", **meta}, "spec": {"rayVersion": "2.60.0"}}


def _pod(name: str, owner: dict[str, Any] | None = None, block: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": block,
            }
        ]
    return {"metadata": meta, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_create_sets_server_metadata() -> None:
    store = Store()
    created = store.create("ray.io/v1", "RayCluster", _raycluster("a"))
    meta = created["metadata"]
    assert meta["generation"] == 1
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert created["apiVersion"] == "ray.io/v1"
    assert created["kind"] == "RayCluster"


def test_create_twice_is_already_exists_and_missing_namespace_is_not_found() -> None:
    store = Store()
    store.create("v1", "ConfigMap", _cm("a"))
    with pytest.raises(ApiError) as exists:
        store.create("v1", "ConfigMap", _cm("a"))
    assert (exists.value.status, exists.value.reason) == (409, "AlreadyExists")
    with pytest.raises(ApiError) as missing:
        store.create("v1", "ConfigMap", {"metadata": {"name": "b", "namespace": "nope"}})
    assert missing.value.status == 404


def test_generate_name_appends_five_characters() -> None:
    created = Store().create("v1", "ConfigMap", {"metadata": {"generateName": "job-"}})
    assert created["metadata"]["name"].startswith("job-")
    assert len(created["metadata"]["name"]) == 9


@pytest.mark.parametrize(
    ("change", "generation"),
    [
        (lambda o: o["spec"].update(rayVersion="2.61.0"), 2),
        (lambda o: o["metadata"].setdefault("labels", {}).update(x="y"), 1),
        (lambda o: o.update(status={"state": "ready"}), 1),
    ],
    ids=["spec-bumps", "labels-do-not", "status-ignored-on-main-resource"],
)
def test_generation_is_bumped_on_spec_change_only(change: Any, generation: int) -> None:
    store = Store()
    obj = store.create("ray.io/v1", "RayCluster", _raycluster("a"))
    change(obj)
    updated = store.update("ray.io/v1", "RayCluster", obj)
    assert updated["metadata"]["generation"] == generation
    assert "status" not in updated


def test_stale_resource_version_is_conflict() -> None:
    store = Store()
    first = store.create("v1", "ConfigMap", _cm("a"))
    store.update("v1", "ConfigMap", {**first, "data": {"k": "2"}})
    with pytest.raises(ApiError) as err:
        store.update("v1", "ConfigMap", {**first, "data": {"k": "3"}})
    assert (err.value.status, err.value.reason) == (409, "Conflict")


def test_status_update_writes_only_status() -> None:
    store = Store()
    obj = store.create("ray.io/v1", "RayCluster", _raycluster("a"))
    obj["spec"]["rayVersion"] = "changed"
    obj["status"] = {"state": "ready"}
    updated = store.update("ray.io/v1", "RayCluster", obj, status=True)
    assert updated["status"] == {"state": "ready"}
    assert updated["spec"]["rayVersion"] == "2.60.0"


def test_noop_update_keeps_resource_version() -> None:
    store = Store()
    obj = store.create("v1", "ConfigMap", _cm("a"))
    assert (
        store.update("v1", "ConfigMap", obj)["metadata"]["resourceVersion"]
        == obj["metadata"]["resourceVersion"]
    )


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=a", ["one"]),
        ("app==a", ["one"]),
        ("app!=a", ["three", "two"]),
        ("app in (a,b)", ["one", "two"]),
        ("app notin (a)", ["three", "two"]),
        ("app", ["one", "two"]),
        ("!app", ["three"]),
        ("app=a,tier=web", ["one"]),
    ],
)
def test_label_selectors(selector: str, expected: list[str]) -> None:
    store = Store()
    store.create("v1", "ConfigMap", _cm("one", {"app": "a", "tier": "web"}))
    store.create("v1", "ConfigMap", _cm("two", {"app": "b"}))
    store.create("v1", "ConfigMap", _cm("three", {"other": "x"}))
    found = store.list("v1", "ConfigMap", "default", label_selector=selector)
    assert sorted(o["metadata"]["name"] for o in found) == expected


def test_service_gets_cluster_ip_kept_on_update_and_released_on_delete() -> None:
    store = Store()
    svc = store.create("v1", "Service", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    ip = svc["spec"]["clusterIP"]
    assert ip.startswith("127.0.1.")
    assert svc["spec"]["ports"][0]["targetPort"] == 80
    svc["spec"]["clusterIP"] = ""
    assert store.update("v1", "Service", svc)["spec"]["clusterIP"] == ip
    headless = store.create("v1", "Service", {"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}})
    assert headless["spec"]["clusterIP"] == "None"
    store.delete("v1", "Service", "default", "s")
    assert not store.pools.services.in_use(ip)


def test_finalizers_hold_the_object_until_removed() -> None:
    store = Store()
    store.create("ray.io/v1", "RayCluster", _raycluster("a", finalizers=["x/y"]))
    lingering = store.delete("ray.io/v1", "RayCluster", "default", "a")
    assert lingering is not None
    assert lingering["metadata"]["deletionTimestamp"]
    lingering["metadata"]["finalizers"] = []
    store.update("ray.io/v1", "RayCluster", lingering)
    assert store.try_get("ray.io/v1", "RayCluster", "default", "a") is None


@pytest.mark.parametrize(
    ("propagation", "owner_left", "pod_left", "pod_owned"),
    [("Background", False, False, False), ("Orphan", False, True, False)],
)
def test_gc_background_and_orphan(
    propagation: str, owner_left: bool, pod_left: bool, pod_owned: bool
) -> None:
    store = Store()
    owner = store.create("ray.io/v1", "RayCluster", _raycluster("c"))
    store.create("v1", "Pod", _pod("p", owner))
    store.delete("ray.io/v1", "RayCluster", "default", "c", propagation)
    assert (store.try_get("ray.io/v1", "RayCluster", "default", "c") is not None) == owner_left
    pod = store.try_get("v1", "Pod", "default", "p")
    assert (pod is not None) == pod_left
    if pod is not None:
        assert bool(pod["metadata"].get("ownerReferences")) == pod_owned


def test_gc_foreground_waits_for_blocking_dependents() -> None:
    store = Store()
    owner = store.create("ray.io/v1", "RayCluster", _raycluster("c"))
    store.create(
        "v1", "Pod", {**_pod("p", owner), "metadata": {**_pod("p", owner)["metadata"], "finalizers": ["f"]}}
    )
    lingering = store.delete("ray.io/v1", "RayCluster", "default", "c", "Foreground")
    assert lingering is not None
    assert "foregroundDeletion" in lingering["metadata"]["finalizers"]
    pod = store.get("v1", "Pod", "default", "p")
    assert pod["metadata"]["deletionTimestamp"]
    store.patch(
        "v1", "Pod", "default", "p", {"metadata": {"finalizers": None}}, "application/merge-patch+json"
    )
    assert store.try_get("v1", "Pod", "default", "p") is None
    assert store.try_get("ray.io/v1", "RayCluster", "default", "c") is None


def test_namespace_delete_removes_its_contents() -> None:
    store = Store()
    store.create("v1", "Namespace", {"metadata": {"name": "ns1"}})
    store.create("v1", "ConfigMap", {"metadata": {"name": "a", "namespace": "ns1"}})
    assert store.delete("v1", "Namespace", None, "ns1") is None
    assert store.list("v1", "ConfigMap", "ns1") == []


async def _collect(store: Store, count: int, **kwargs: Any) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    async for event in store.watch("v1", "ConfigMap", "default", **kwargs):
        events.append(event)
        if len(events) == count:
            break
    return events


async def test_watch_initial_state_then_changes() -> None:
    store = Store()
    store.create("v1", "ConfigMap", _cm("a"))
    task = asyncio.create_task(_collect(store, 3))
    await asyncio.sleep(0)
    obj = store.create("v1", "ConfigMap", _cm("b"))
    store.delete("v1", "ConfigMap", "default", obj["metadata"]["name"])
    events = await asyncio.wait_for(task, 5)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("DELETED", "b"),
    ]


async def test_watch_resumes_from_resource_version_and_label_transitions() -> None:
    store = Store()
    obj = store.create("v1", "ConfigMap", _cm("a", {"app": "x"}))
    obj["metadata"]["labels"] = {"app": "y"}
    store.update("v1", "ConfigMap", obj)
    events = await asyncio.wait_for(
        _collect(store, 1, resource_version=obj["metadata"]["resourceVersion"], label_selector="app=x"), 5
    )
    assert events[0].type == "DELETED"  # left the selector


async def test_watch_from_compacted_resource_version_is_expired() -> None:
    store = Store()
    obj = store.create("v1", "ConfigMap", _cm("a"))
    store.create("v1", "ConfigMap", _cm("b"))
    store.compact()
    with pytest.raises(ApiError) as err:
        await _collect(store, 1, resource_version=obj["metadata"]["resourceVersion"])
    assert (err.value.status, err.value.reason) == (410, "Expired")


@pytest.mark.parametrize(
    ("patch", "patch_type", "expected_containers"),
    [
        (
            {"spec": {"containers": [{"name": "c", "image": "new"}]}},
            "application/strategic-merge-patch+json",
            [{"name": "c", "image": "new"}, {"name": "d", "image": "x"}],
        ),
        (
            {"spec": {"containers": [{"name": "c", "image": "new"}]}},
            "application/merge-patch+json",
            [{"name": "c", "image": "new"}],
        ),
        (
            [{"op": "replace", "path": "/spec/containers/1/image", "value": "y"}],
            "application/json-patch+json",
            [{"name": "c", "image": "busybox"}, {"name": "d", "image": "y"}],
        ),
        (
            {"spec": {"containers": [{"name": "d", "$patch": "delete"}]}},
            "application/strategic-merge-patch+json",
            [{"name": "c", "image": "busybox"}],
        ),
    ],
    ids=["strategic-merges-by-name", "merge-replaces-list", "json-patch", "strategic-delete-directive"],
)
def test_patch_types(patch: Any, patch_type: str, expected_containers: list[dict[str, str]]) -> None:
    store = Store()
    pod = _pod("p")
    pod["spec"]["containers"].append({"name": "d", "image": "x"})
    store.create("v1", "Pod", pod)
    patched = store.patch("v1", "Pod", "default", "p", patch, patch_type)
    assert patched["spec"]["containers"] == expected_containers


def test_strategic_merge_patch_is_refused_for_custom_resources() -> None:
    store = Store()
    store.create("ray.io/v1", "RayCluster", _raycluster("a"))
    with pytest.raises(ApiError) as err:
        store.patch(
            "ray.io/v1", "RayCluster", "default", "a", {"spec": {}}, "application/strategic-merge-patch+json"
        )
    assert err.value.status == 415


def test_apply_creates_then_merges_what_another_manager_applies() -> None:
    store = Store()
    applied = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "a"}, "spec": {"x": 1}}
    apply = "application/apply-patch+yaml"
    created = store.patch("ray.io/v1", "RayCluster", "default", "a", applied, apply, field_manager="one")
    assert created["metadata"]["generation"] == 1
    applied["spec"] = {"y": 2}
    merged = store.patch("ray.io/v1", "RayCluster", "default", "a", applied, apply, field_manager="two")
    assert merged["spec"] == {"x": 1, "y": 2}
    assert merged["metadata"]["generation"] == 2


def test_dependent_with_a_surviving_owner_only_loses_the_reference() -> None:
    store = Store()
    first = store.create("ray.io/v1", "RayCluster", _raycluster("a"))
    second = store.create("ray.io/v1", "RayCluster", _raycluster("b"))
    pod = _pod("p", first)
    pod["metadata"]["ownerReferences"].append(_pod("x", second)["metadata"]["ownerReferences"][0])
    store.create("v1", "Pod", pod)
    store.delete("ray.io/v1", "RayCluster", "default", "a")
    refs = store.get("v1", "Pod", "default", "p")["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["b"]
    store.delete("ray.io/v1", "RayCluster", "default", "b")
    assert store.try_get("v1", "Pod", "default", "p") is None


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("involvedObject.name=p1", ["e1"]),
        ("involvedObject.kind=Pod,reason!=Started", ["e2"]),
        ("type=Warning", ["e2"]),
    ],
)
def test_event_field_selectors(selector: str, expected: list[str]) -> None:
    store = Store()
    for name, pod, reason, kind in (("e1", "p1", "Started", "Normal"), ("e2", "p2", "BackOff", "Warning")):
        event = {
            "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": pod},
            "reason": reason,
            "type": kind,
        }
        store.create("v1", "Event", event)
    found = store.list("v1", "Event", "default", field_selector=selector)
    assert [e["metadata"]["name"] for e in found] == expected


def test_unsupported_field_selector_is_bad_request() -> None:
    with pytest.raises(ApiError) as err:
        Store().list("v1", "ConfigMap", "default", field_selector="data.k=v")
    assert err.value.status == 400


def test_apply_removes_fields_the_manager_stopped_applying_but_keeps_others() -> None:
    store = Store()
    apply = "application/apply-patch+yaml"
    first = {"metadata": {"name": "r", "labels": {"a": "1", "b": "2"}}, "spec": {"x": 1, "y": 2}}
    store.patch("ray.io/v1", "RayCluster", "default", "r", first, apply, field_manager="raypilot")
    store.patch(
        "ray.io/v1",
        "RayCluster",
        "default",
        "r",
        {"metadata": {"labels": {"c": "3"}}},
        "application/merge-patch+json",
    )
    second = {"metadata": {"name": "r", "labels": {"a": "1"}}, "spec": {"x": 1}}
    result = store.patch("ray.io/v1", "RayCluster", "default", "r", second, apply, field_manager="raypilot")
    assert result["metadata"]["labels"] == {"a": "1", "c": "3"}
    assert result["spec"] == {"x": 1}
    other = {"metadata": {"name": "r"}, "spec": {"z": 3}}
    result = store.patch(
        "ray.io/v1", "RayCluster", "default", "r", other, apply, field_manager="someone-else"
    )
    assert result["spec"] == {"x": 1, "z": 3}


def test_read_list_shares_the_stored_objects_and_a_write_leaves_them_as_read() -> None:
    """The controllers read without copies; that is sound only because a write stores a new object."""
    store = Store()
    store.create("v1", "ConfigMap", _cm("a", {"app": "x"}))
    (held,) = store.read_list("v1", "ConfigMap", "default", label_selector="app=x")
    assert held is store.read_list("v1", "ConfigMap", "default")[0]
    assert held == store.get("v1", "ConfigMap", "default", "a")
    before = copy.deepcopy(held)
    store.patch("v1", "ConfigMap", "default", "a", {"data": {"k": "changed"}}, "application/merge-patch+json")
    store.delete("v1", "ConfigMap", "default", "a")
    assert held == before
    assert store.read_list("v1", "ConfigMap", "default") == []
