"""The EndpointSlice controller: slices per Service that track pods, readiness and selectors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from sandbox.controllers.endpoints import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    SLICE_API_VERSION,
    EndpointSliceController,
    desired_endpoint_slices,
)
from sandbox.store import Store


def service_manifest(
    name: str = "svc", selector: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "selector": selector if selector is not None else {"app": "a"},
            "ports": [{"name": "serve", "port": 8000, "targetPort": "serve", "protocol": "TCP"}],
            **spec,
        },
    }


def summary(slices: list[dict[str, Any]]) -> list[tuple[list[tuple[str, bool, bool, bool]], list[int]]]:
    """Per slice: (address, ready, serving, terminating) per endpoint, and the port numbers."""
    return [
        (
            [
                (
                    e["addresses"][0],
                    e["conditions"]["ready"],
                    e["conditions"]["serving"],
                    e["conditions"]["terminating"],
                )
                for e in s["endpoints"]
            ],
            [p["port"] for p in s["ports"]],
        )
        for s in slices
    ]


def terminating(pod: dict[str, Any]) -> dict[str, Any]:
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


@pytest.mark.parametrize(
    ("pods", "spec", "expected"),
    [
        pytest.param([], {}, [([], [])], id="no-pods-named-port-unknown"),
        pytest.param(
            [], {"ports": [{"name": "x", "port": 80, "targetPort": 8080}]}, [([], [8080])], id="no-pods"
        ),
        pytest.param(
            [("a", "10.0.0.1", True, 8000), ("b", "10.0.0.2", False, 8000)],
            {},
            [([("10.0.0.1", True, True, False), ("10.0.0.2", False, False, False)], [8000])],
            id="ready-and-not",
        ),
        pytest.param(
            [("a", "10.0.0.1", False, 8000)],
            {"publishNotReadyAddresses": True},
            [([("10.0.0.1", True, True, False)], [8000])],
            id="publish-not-ready",
        ),
        pytest.param(
            [("a", "10.0.0.1", True, 8000), ("b", "10.0.0.2", True, 9000)],
            {},
            [([("10.0.0.1", True, True, False)], [8000]), ([("10.0.0.2", True, True, False)], [9000])],
            id="one-slice-per-resolved-port",
        ),
        pytest.param([("a", None, True, 8000)], {}, [([], [])], id="pod-without-ip"),
        pytest.param(
            [("t", "10.0.0.3", True, 8000)],
            {},
            [([("10.0.0.3", False, True, True)], [8000])],
            id="terminating",
        ),
    ],
)
def test_desired_endpoint_slices(make_pod, pods, spec, expected) -> None:
    manifests = []
    for name, ip, ready, port in pods:
        pod = make_pod(name, ip, {"app": "a"}, ports={"serve": port}, ready=ready)
        manifests.append(terminating(pod) if name == "t" else pod)
    manifests.append(make_pod("elsewhere", "10.0.0.9", {"app": "a"}, ports={"serve": 1}, namespace="other"))
    slices = desired_endpoint_slices(service_manifest(**spec), manifests)
    assert summary(slices) == expected
    for endpoint_slice in slices:
        assert endpoint_slice["metadata"]["labels"] == {
            SERVICE_NAME_LABEL: "svc",
            MANAGED_BY_LABEL: MANAGED_BY,
        }
        assert endpoint_slice["metadata"]["ownerReferences"][0]["uid"] == "uid-svc"
        assert endpoint_slice["metadata"]["name"].startswith("svc-")


def test_endpoint_target_ref_names_the_pod(make_pod) -> None:
    pod = make_pod("p", "10.0.0.1", {"app": "a"}, ports={"serve": 8000})
    [endpoint_slice] = desired_endpoint_slices(service_manifest(), [pod])
    assert endpoint_slice["endpoints"][0]["targetRef"] == {
        "kind": "Pod",
        "name": "p",
        "namespace": "default",
        "uid": "uid-p",
    }
    assert endpoint_slice["ports"] == [{"name": "serve", "port": 8000, "protocol": "TCP"}]


@pytest.fixture
async def slices(store: Store) -> AsyncIterator[EndpointSliceController]:
    controller = EndpointSliceController(store)
    await controller.start()
    yield controller
    await controller.stop()


def slices_of(store: Store, service: str) -> list[dict[str, Any]]:
    return store.list(
        SLICE_API_VERSION, "EndpointSlice", "default", label_selector=f"{SERVICE_NAME_LABEL}={service}"
    )


def addresses(store: Store, service: str, *, ready: bool) -> set[str]:
    return {
        e["addresses"][0]
        for s in slices_of(store, service)
        for e in s["endpoints"]
        if e["conditions"]["ready"] is ready
    }


async def test_slices_follow_readiness_selector_and_deletion(
    store: Store, slices: EndpointSliceController, make_pod, eventually
) -> None:
    store.create("v1", "Pod", make_pod("a", "127.0.3.1", {"app": "a"}, ports={"serve": 8000}))
    store.create("v1", "Pod", make_pod("b", "127.0.3.2", {"app": "a"}, ports={"serve": 8000}, ready=False))
    store.create("v1", "Pod", make_pod("c", "127.0.3.3", {"app": "c"}, ports={"serve": 8000}))
    created = store.create("v1", "Service", service_manifest())  # the store assigns its own uid
    await eventually(lambda: addresses(store, "svc", ready=True) == {"127.0.3.1"})
    assert addresses(store, "svc", ready=False) == {"127.0.3.2"}
    [endpoint_slice] = slices_of(store, "svc")
    assert endpoint_slice["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]

    pod = store.get("v1", "Pod", "default", "b")
    pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    store.update("v1", "Pod", pod, status=True)
    await eventually(lambda: addresses(store, "svc", ready=True) == {"127.0.3.1", "127.0.3.2"})

    store.patch(
        "v1",
        "Service",
        "default",
        "svc",
        {"spec": {"selector": {"app": "c"}}},
        "application/merge-patch+json",
    )
    await eventually(lambda: addresses(store, "svc", ready=True) == {"127.0.3.3"})

    store.delete("v1", "Pod", "default", "c")
    await eventually(lambda: [s["endpoints"] for s in slices_of(store, "svc")] == [[]])

    store.delete("v1", "Service", "default", "svc")
    await eventually(lambda: slices_of(store, "svc") == [])


async def test_slice_deleted_by_hand_comes_back_and_selectorless_services_are_left_alone(
    store: Store, slices: EndpointSliceController, make_pod, eventually
) -> None:
    store.create("v1", "Pod", make_pod("a", "127.0.3.1", {"app": "a"}, ports={"serve": 8000}))
    store.create("v1", "Service", service_manifest("manual", selector={}))
    store.create("v1", "Service", service_manifest())
    await eventually(lambda: addresses(store, "svc", ready=True) == {"127.0.3.1"})
    [endpoint_slice] = slices_of(store, "svc")
    store.delete(SLICE_API_VERSION, "EndpointSlice", "default", endpoint_slice["metadata"]["name"])
    await eventually(lambda: addresses(store, "svc", ready=True) == {"127.0.3.1"})
    assert slices_of(store, "manual") == []
