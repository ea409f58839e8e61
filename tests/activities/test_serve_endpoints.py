"""numServeEndpoints is counted per ready Pod over a Service's EndpointSlices, as KubeRay counts it."""

from __future__ import annotations

from typing import Any

import pytest

from activities.kubernetes.clusters import count_ready_serve_endpoints


def endpoint(uid: str | None, ready: bool | None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "addresses": ["10.0.0.1"],
        "conditions": {} if ready is None else {"ready": ready},
    }
    if uid is not None:
        result["targetRef"] = {"kind": "Pod", "uid": uid}
    return result


def test_count_ready_serve_endpoints_deduplicates_pods_across_slices() -> None:
    slices = [
        {"endpoints": [endpoint("pod-1", True), endpoint("pod-2", False), endpoint("pod-3", None)]},
        {"endpoints": [endpoint("pod-1", True), endpoint("pod-4", True), endpoint(None, True)]},  # IPv6 slice
        {"endpoints": None},
    ]
    assert count_ready_serve_endpoints(slices) == 2
    assert count_ready_serve_endpoints([]) == 0


def test_count_ready_serve_endpoints_stops_at_int32_as_kuberay() -> None:
    pods = [endpoint(f"pod-{index}", True) for index in range(3)]
    assert count_ready_serve_endpoints([{"endpoints": pods}]) == 3
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("activities.kubernetes.clusters.INT32_MAX", 2)
        with pytest.raises(OverflowError):
            count_ready_serve_endpoints([{"endpoints": pods}])
