"""The activities of a shared Gateway and a user-owned HTTPRoute on the real stack (its API server and the
sandbox's Gateway controller): the JSON Patch of a user's route applies whole or, when the route changed since
it was read, not at all (the route as it is now comes back); a namespace's labels are read; the Gateway wait
follows a Gateway and a route in namespaces other than the RayService's, with their generations and the labels
of the route's namespace in its view."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from kubernetes import client

from activities.gateway import GatewayActivities
from activities.registry import ActivityDependencies
from activities.waits import DashboardWaits
from tests.activities.conftest import TEST_NAMESPACE_LABEL, RecordingEnvironment, new_namespace, run_activity
from wire.kubernetes import CreateObject, PatchRoute, WaitGateway

pytestmark = pytest.mark.timeout(60)


def shared_gateway(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "shared", "namespace": namespace},
        "spec": {
            "gatewayClassName": "sandbox",
            "listeners": [
                {
                    "name": "http",
                    "port": 80,
                    "protocol": "HTTP",
                    "allowedRoutes": {"namespaces": {"from": "All"}},
                }
            ],
        },
    }


def user_route(namespace: str, gateway_namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "api", "namespace": namespace, "labels": {"app": "api"}},
        "spec": {
            "parentRefs": [{"name": "shared", "namespace": gateway_namespace}],
            "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/docs"}}], "backendRefs": []},
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [{"name": "svc-serve-svc", "port": 8000}],
                },
            ],
        },
    }


def test_a_route_patch_applies_whole_or_not_at_all(deps: ActivityDependencies, namespace: str) -> None:
    gateways = GatewayActivities(deps)
    made = run_activity(gateways.create_httproute, CreateObject(user_route(namespace, namespace)))
    as_read = made["spec"]["rules"][1]["backendRefs"]
    new = [{"name": "svc-bcdfg-serve-svc", "namespace": namespace, "port": 8000, "weight": 100}]
    patch = [
        {"op": "test", "path": "/spec/rules/1/backendRefs", "value": as_read},
        {"op": "replace", "path": "/spec/rules/1/backendRefs", "value": new},
        {"op": "add", "path": "/metadata/labels/raypilot.io~1traffic-split", "value": "in-progress"},
    ]
    patched = run_activity(gateways.patch_httproute, PatchRoute(namespace, "api", patch))
    assert patched.applied is True
    assert patched.route is not None
    [written] = patched.route["spec"]["rules"][1]["backendRefs"]
    assert (written["name"], written["weight"]) == ("svc-bcdfg-serve-svc", 100)
    assert patched.route["metadata"]["labels"] == {"app": "api", "raypilot.io/traffic-split": "in-progress"}
    assert patched.route["spec"]["rules"][0] == made["spec"]["rules"][0]
    # The same patch again (a retried attempt, or a route changed meanwhile): its test fails, nothing changes.
    again = run_activity(gateways.patch_httproute, PatchRoute(namespace, "api", patch))
    assert again.applied is False
    assert again.route is not None
    assert again.route["spec"] == patched.route["spec"]
    # (its status may have been written by the Gateway controller meanwhile: the generation counts the spec)
    assert again.route["metadata"]["generation"] == patched.route["metadata"]["generation"]
    gone = run_activity(gateways.patch_httproute, PatchRoute(namespace, "nobody", patch))
    assert (gone.route, gone.applied) == (None, False)


def test_a_namespaces_labels_are_read(deps: ActivityDependencies, namespace: str) -> None:
    gateways = GatewayActivities(deps)
    labels = run_activity(gateways.get_namespace_labels, namespace)
    assert labels[TEST_NAMESPACE_LABEL] == "true"
    assert labels["kubernetes.io/metadata.name"] == namespace
    assert run_activity(gateways.get_namespace_labels, "no-such-namespace") is None


async def test_the_gateway_wait_follows_objects_across_namespaces(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api, recording: RecordingEnvironment
) -> None:
    infra = new_namespace(core_api)
    gateways = GatewayActivities(deps)
    await asyncio.to_thread(run_activity, gateways.create_gateway, CreateObject(shared_gateway(infra)))
    await asyncio.to_thread(
        run_activity, gateways.create_httproute, CreateObject(user_route(namespace, infra))
    )
    request = WaitGateway(
        "elsewhere",
        "shared",
        "api",
        until="change",
        poll_seconds=0.05,
        gateway_namespace=infra,
        route_namespace=namespace,
        with_specs=True,
        namespace_labels_of=namespace,
    )
    async with asyncio.timeout(20):
        first = await recording.env.run(DashboardWaits(deps).wait_gateway, request)
    assert first.gateway is not None
    assert first.route is not None
    assert first.view["generations"] == [1, 1]
    assert first.namespace_labels is not None
    assert first.namespace_labels[TEST_NAMESPACE_LABEL] == "true"
    # A change of the route's rules (a new generation) ends a wait from that view.
    bumped = [{"op": "replace", "path": "/spec/rules/0/matches/0/path/value", "value": "/help"}]
    await asyncio.to_thread(run_activity, gateways.patch_httproute, PatchRoute(namespace, "api", bumped))
    async with asyncio.timeout(20):
        while True:
            later = await recording.env.run(
                DashboardWaits(deps).wait_gateway,
                dataclasses.replace(request, last_view=first.view),
            )
            if later.view["generations"] != first.view["generations"]:
                break
            first = later  # a status written by the Gateway controller meanwhile
    assert later.view["generations"][1] == 2
