"""An incremental upgrade through a shared Gateway (`raypilot.io/gateway`) and a user-owned HTTPRoute
(`raypilot.io/httproute`) on the fake world: raypilot creates neither, patches only the owned backendRefs of
the user's route (and the traffic-split label while both clusters carry traffic), says with a condition and an
Event what keeps it from routing and waits, by the Gateway wait, for that to be fixed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio.testing import WorkflowEnvironment

from models.traffic_refs import ANNOTATION_GATEWAY, ANNOTATION_HTTPROUTE, LABEL_TRAFFIC_SPLIT
from raypilot.testing.rayservice_scenarios import INCREMENTAL, condition_of, eventually, rayservice_manifest
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.rayservice.upgrade_support import (
    apply,
    serving,
    status_when,
    upgrade_finished,
    with_condition,
)
from workflows.decisions.rayservice.upgrade.traffic_route import (
    REASON_GATEWAY_NOT_USABLE,
    REASON_HTTPROUTE_NOT_USABLE,
    TRAFFIC_ROUTE_NOT_USABLE_CONDITION,
)

ROUTE_KEY = ("team-a", "api")
DOCS_RULE = {
    "matches": [{"path": {"type": "PathPrefix", "value": "/docs"}}],
    "backendRefs": [{"name": "docs", "port": 80}],
}
API_RULE = {
    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
    "timeouts": {"request": "30s"},
    "backendRefs": [{"name": "svc-serve-svc", "namespace": "default", "port": 8000}],
}


def manifest(annotations: dict[str, str], version: str = "v1") -> dict[str, Any]:
    return rayservice_manifest(
        version=version, strategy=INCREMENTAL, autoscaling=True, deletion_delay=5, annotations=annotations
    )


def user_route() -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "api", "namespace": "team-a", "labels": {"app": "api"}},
        "spec": {
            "hostnames": ["api.example.com"],
            "parentRefs": [{"name": "shared", "namespace": "infra"}],
            "rules": [copy.deepcopy(DOCS_RULE), copy.deepcopy(API_RULE)],
        },
    }


def add_shared_gateway_for_all(world: FakeRayWorld) -> None:
    """The platform team's Gateway infra/shared, admitting routes from every namespace."""
    everyone = {"namespaces": {"from": "All"}}
    world.shared.add_gateway(
        "infra", "shared", [{"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": everyone}]
    )


def without(condition_type: str) -> Callable[[dict[str, Any]], bool]:
    def holds(status: dict[str, Any]) -> bool:
        return not any(found.get("type") == condition_type for found in status.get("conditions") or [])

    return holds


def owned_backends(world: FakeRayWorld) -> list[dict[str, Any]]:
    return list(world.shared.routes[ROUTE_KEY]["spec"]["rules"][1]["backendRefs"])


def split_label(world: FakeRayWorld) -> str | None:
    labels: dict[str, str] = world.shared.routes[ROUTE_KEY]["metadata"].get("labels", {})
    return labels.get(LABEL_TRAFFIC_SPLIT)


def without_owned_rule(route: dict[str, Any]) -> dict[str, Any]:
    """The route with the owned rule's backendRefs and the traffic-split label taken out: what raypilot must
    leave exactly as the user wrote it."""
    found = copy.deepcopy(route)
    found["metadata"].get("labels", {}).pop(LABEL_TRAFFIC_SPLIT, None)
    found["metadata"].pop("generation", None)
    del found["spec"]["rules"][1]["backendRefs"]
    return found


async def test_an_upgrade_through_a_users_route_patches_only_its_own_backends(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    add_shared_gateway_for_all(world)
    world.shared.add_route(user_route())
    annotations = {ANNOTATION_HTTPROUTE: "team-a/api", ANNOTATION_GATEWAY: "infra/shared"}
    async with serving(env, world, manifest(annotations)) as (handle, old):

        async def at_rest_on(cluster: str) -> bool:
            return owned_backends(world) == [
                {"name": f"{cluster}-serve-svc", "namespace": "default", "port": 8000, "weight": 100}
            ]

        await eventually(env, lambda: at_rest_on(old))
        assert split_label(world) is None
        await apply(handle, manifest(annotations, "v2"))
        upgrading = await status_when(env, handle, with_condition("UpgradeInProgress"))
        new = upgrading["pendingServiceStatus"]["rayClusterName"]

        async def split() -> bool:
            names = [ref["name"] for ref in owned_backends(world)]
            return names == [f"{old}-serve-svc", f"{new}-serve-svc"] and split_label(world) == "in-progress"

        await eventually(env, split)
        await eventually(env, upgrade_finished(handle, old))
        await eventually(env, lambda: at_rest_on(new))
        assert split_label(world) is None
        # The weights the status reports are read back from the user's route.
        final = await status_when(
            env, handle, lambda status: not status.get("pendingServiceStatus", {}).get("rayClusterName")
        )
        assert final["activeServiceStatus"]["trafficRoutedPercent"] == 100
        weights = [
            act.detail[f"{new}-serve-svc"]
            for act in world.acts("patch", "HTTPRoute")
            if f"{new}-serve-svc" in act.detail
        ]
        assert weights == sorted(weights)
        assert weights[-1] == 100
        assert [weight for weight in weights if 0 < weight < 100], weights  # traffic moved step by step
        # Every patch touched only the owned rule's backendRefs and the label; the rest is the user's.
        assert without_owned_rule(world.shared.routes[ROUTE_KEY]) == without_owned_rule(user_route())
        paths = {op["path"] for _, _, ops, _ in world.shared.patches for op in ops}
        assert paths <= {"/spec/rules/1/backendRefs", "/metadata/labels/raypilot.io~1traffic-split"}
        # raypilot made no Gateway and no HTTPRoute of its own.
        assert world.acts("create", "Gateway") == []
        assert world.acts("create", "HTTPRoute") == []
        assert without(TRAFFIC_ROUTE_NOT_USABLE_CONDITION)(final)

        result = await handle.execute_update("delete", result_type=dict)
    assert not any("HTTPRoute" in ref or "Gateway" in ref for ref in result["deleted"])
    # The route stays, pointing at the RayService's serve Service as before raypilot, without the label.
    assert owned_backends(world) == [{"name": "svc-serve-svc", "port": 8000, "namespace": "default"}]
    assert split_label(world) is None
    assert ("infra", "shared") in world.shared.gateways


async def test_a_shared_gateway_that_is_missing_or_does_not_admit_the_namespace_holds_the_route(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    annotations = {ANNOTATION_GATEWAY: "infra/shared"}
    async with serving(env, world, manifest(annotations)) as (handle, _):
        missing = await status_when(env, handle, with_condition(TRAFFIC_ROUTE_NOT_USABLE_CONDITION))
        _, reason = condition_of(missing, TRAFFIC_ROUTE_NOT_USABLE_CONDITION)
        assert reason == REASON_GATEWAY_NOT_USABLE
        assert world.route is None
        assert world.gateway is None
        [event] = [event for event in world.events if event.reason == REASON_GATEWAY_NOT_USABLE]
        assert "infra/shared" in event.message
        assert "does not exist" in event.message

        # The platform team makes the Gateway, for its own namespace only: still no route, another message.
        same_only = {"name": "http", "protocol": "HTTP", "port": 80}
        world.shared.add_gateway("infra", "shared", [same_only])

        async def said_not_admitted() -> bool:
            return any(
                "admits no HTTPRoute from namespace 'default'" in event.message for event in world.events
            )

        await eventually(env, said_not_admitted)
        assert world.route is None

        # It admits namespaces labelled team=ml; the RayService's namespace gets that label.
        world.shared.namespace_labels["default"] = {"kubernetes.io/metadata.name": "default", "team": "ml"}
        selector = {"from": "Selector", "selector": {"matchLabels": {"team": "ml"}}}
        world.shared.edit_gateway(
            "infra", "shared", [{**same_only, "allowedRoutes": {"namespaces": selector}}]
        )
        await status_when(env, handle, without(TRAFFIC_ROUTE_NOT_USABLE_CONDITION))

        async def routed_on_shared() -> bool:
            return world.route is not None

        await eventually(env, routed_on_shared)
        assert world.route is not None
        assert world.route["spec"]["parentRefs"] == [{"name": "shared", "namespace": "infra"}]
        assert world.acts("create", "Gateway") == []
        await handle.execute_update("delete", result_type=dict)
    assert ("infra", "shared") in world.shared.gateways


async def test_a_users_route_without_a_rule_for_the_rayservice_is_waited_on_without_history(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, FakeRayWorld()
    add_shared_gateway_for_all(world)
    unmarked = user_route()
    del unmarked["spec"]["rules"][1]
    world.shared.add_route(unmarked)
    async with serving(env, world, manifest({ANNOTATION_HTTPROUTE: "team-a/api"})) as (handle, old):
        held = await status_when(env, handle, with_condition(TRAFFIC_ROUTE_NOT_USABLE_CONDITION))
        _, reason = condition_of(held, TRAFFIC_ROUTE_NOT_USABLE_CONDITION)
        assert reason == REASON_HTTPROUTE_NOT_USABLE
        message = next(
            c["message"] for c in held["conditions"] if c["type"] == TRAFFIC_ROUTE_NOT_USABLE_CONDITION
        )
        assert "team-a/api" in message
        assert "default/svc-serve-svc" in message
        assert world.shared.patches == []
        # Waiting for the fix is one Gateway wait: the history does not grow meanwhile.
        handle_id = env.client.get_workflow_handle(handle.id)
        before = (await handle_id.describe()).history_length
        await env.sleep(timedelta(minutes=10))
        assert (await handle_id.describe()).history_length == before

        # The user adds the rule (a new generation): raypilot patches it, the condition goes.
        fixed = world.shared.routes[ROUTE_KEY]
        fixed["spec"]["rules"].append(copy.deepcopy(API_RULE))
        fixed["metadata"]["generation"] += 1
        await status_when(env, handle, without(TRAFFIC_ROUTE_NOT_USABLE_CONDITION))

        async def patched() -> bool:
            return owned_backends(world) == [
                {"name": f"{old}-serve-svc", "namespace": "default", "port": 8000, "weight": 100}
            ]

        await eventually(env, patched)
        assert without_owned_rule(world.shared.routes[ROUTE_KEY])["spec"]["rules"][0] == DOCS_RULE
