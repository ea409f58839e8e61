"""How the fault proxy in front of the real API server names a request's verb and resource: the names its
rules match (sandbox/faults.py)."""

from __future__ import annotations

import pytest

from sandbox.realkube.faultproxy import request_info


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods", {}, ("list", "pods")),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}, ("watch", "pods")),
        ("GET", "/api/v1/pods", {"watch": "1"}, ("watch", "pods")),
        ("GET", "/api/v1/namespaces/ns/pods/p", {}, ("get", "pods")),
        ("PATCH", "/api/v1/namespaces/ns/pods/p/status", {}, ("patch", "pods/status")),
        ("GET", "/api/v1/namespaces/ns/services/s:8265/proxy/api/jobs/", {}, ("get", "services/proxy")),
        ("POST", "/api/v1/namespaces/ns/services/s:8000/proxy/", {}, ("post", "services/proxy")),
        ("GET", "/api/v1/namespaces", {}, ("list", "namespaces")),
        ("GET", "/api/v1/namespaces/ns", {}, ("get", "namespaces")),
        ("POST", "/apis/ray.io/v1/namespaces/ns/rayclusters", {}, ("create", "rayclusters")),
        ("PUT", "/apis/ray.io/v1/namespaces/ns/rayclusters/c", {}, ("update", "rayclusters")),
        ("DELETE", "/apis/ray.io/v1/namespaces/ns/rayclusters/c", {}, ("delete", "rayclusters")),
        ("DELETE", "/apis/batch/v1/namespaces/ns/jobs", {}, ("deletecollection", "jobs")),
        ("GET", "/apis/ray.io/v1/rayclusters", {}, ("list", "rayclusters")),
        ("GET", "/apis/ray.io/v1", {}, ("", "")),
        ("GET", "/api/v1", {}, ("", "")),
        ("GET", "/version", {}, ("", "")),
        ("GET", "/readyz", {}, ("", "")),
    ],
)
def test_the_verb_and_resource_of_a_request(
    method: str, path: str, query: dict[str, str], expected: tuple[str, str]
) -> None:
    assert request_info(method, path, query) == expected
