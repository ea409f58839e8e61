"""A shared Gateway, a user-owned HTTPRoute and traffic mirroring end to end (issue #34), with simulated Ray
on the real stack, the real worker and the sandbox's Gateway controller, under steady keep-alive load through
the Gateway's address:

- `raypilot.io/gateway` + `raypilot.io/httproute`: v1 -> v2 through a Gateway in another namespace (its
  listener admits the RayService's namespace by a label selector) and a route the test owns, in the
  RayService's namespace (the sandbox's Gateway refuses cross-namespace backendRefs: no ReferenceGrant).
  No request fails; the `raypilot.io/traffic-split` label is on exactly while the route holds both
  clusters; every field of the user's is as written at the end; after the RayService's deletion the Gateway
  and the route remain, the route pointing at `<rs>-serve-svc` again.
- `steps[].mirror`: while the mirror step holds, the new cluster receives 20 % of the requests as copies
  (counted by its head: sandbox/ray/simulated.py's counters) while every client answer is v1's; the
  traffic step ends the mirror in the write that gives the new cluster weight."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from typing import Any

import pytest
from kubernetes import client as k8s

from models.naming import http_route_name
from models.rollout import ANNOTATION_ROLLOUT
from models.traffic_refs import (
    ANNOTATION_GATEWAY,
    ANNOTATION_HTTPROUTE,
    LABEL_TRAFFIC_SPLIT,
    TRAFFIC_SPLIT_IN_PROGRESS,
    NamespacedName,
)
from raypilot.cli.demo_rayservice import gateway_url
from raypilot.cli.demo_support import read_custom
from sandbox.ray.simulated import SIMULATION_COUNTERS_PATH
from tests.integration.rayjob_support import through_api_server
from tests.integration.route_watch import (
    GATEWAY_GROUP,
    RouteSnapshot,
    RouteSnapshots,
    StatusSampler,
    routed_gateway_url,
)
from tests.integration.stack import Stack
from tests.integration.test_rayservice_incremental import NAME, eventually, manifest, sides, steady_load
from workflows.decisions.rayservice.upgrade.user_route import user_route_ready

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(300)]

SERVE_SERVICE = f"{NAME}-serve-svc"  # what a route written for the RayService points at
ROUTE = "api"
GATEWAY = "shared"
HEAD_METRICS_PORT = 8080  # a simulated head Pod's metrics port, where it serves its counters
UPGRADE_WITHIN_S = 150
MIRROR_PERCENT = 20
MIRROR_TOLERANCE = 3.0  # percentage points: the copies and answers in flight at the window's two edges
MIRROR_WINDOW_REQUESTS = 800
# The mirror step holds (an indefinite pause) until the test has counted its window, then is resumed.
MIRROR_PLAN = {
    "steps": [{"mirror": MIRROR_PERCENT}, {"pause": "indefinite"}, {"traffic": 50}, {"traffic": 100}]
}


def custom_object(stack: Stack, namespace: str, plural: str, body: dict[str, Any]) -> None:
    stack.custom.create_namespaced_custom_object(GATEWAY_GROUP, "v1", namespace, plural, body)


def shared_gateway(namespace: str, admitted: str) -> dict[str, Any]:
    """A platform team's Gateway whose one listener admits HTTPRoutes from `admitted` only (by the namespace
    label the API server sets)."""
    selector = {"matchLabels": {"kubernetes.io/metadata.name": admitted}}
    return {
        "apiVersion": f"{GATEWAY_GROUP}/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY, "namespace": namespace},
        "spec": {
            "gatewayClassName": "shared",
            "listeners": [
                {
                    "name": "http",
                    "protocol": "HTTP",
                    "port": 80,
                    "allowedRoutes": {"namespaces": {"from": "Selector", "selector": selector}},
                }
            ],
        },
    }


def user_route(namespace: str, gateway_namespace: str) -> dict[str, Any]:
    """The application team's route: a rule of its own (/docs, to a Service of its own) before the rule it
    wrote for the RayService (to `<rs>-serve-svc`, with a timeout and a second path match of its own)."""
    return {
        "apiVersion": f"{GATEWAY_GROUP}/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": ROUTE, "namespace": namespace, "labels": {"app": "api"}},
        "spec": {
            "hostnames": ["api.example.com"],
            "parentRefs": [{"name": GATEWAY, "namespace": gateway_namespace}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/docs"}}],
                    "backendRefs": [{"name": "docs", "port": 80}],
                },
                {
                    "matches": [
                        {"path": {"type": "PathPrefix", "value": "/"}},
                        {"path": {"type": "PathPrefix", "value": "/predict"}},
                    ],
                    "timeouts": {"request": "30s"},
                    "backendRefs": [{"name": SERVE_SERVICE, "port": 8000}],
                },
            ],
        },
    }


def docs_service(namespace: str) -> k8s.V1Service:
    return k8s.V1Service(
        metadata=k8s.V1ObjectMeta(name="docs", namespace=namespace),
        spec=k8s.V1ServiceSpec(
            selector={"app": "docs"}, ports=[k8s.V1ServicePort(port=80, target_port=8080)]
        ),
    )


def users_fields(route: dict[str, Any]) -> dict[str, Any]:
    """The route without what raypilot owns (the steered rule's backendRefs, the traffic-split label) and
    without what the API server keeps (status, versions): what must stay exactly as the user wrote it."""
    labels = dict(route["metadata"].get("labels") or {})
    labels.pop(LABEL_TRAFFIC_SPLIT, None)
    spec = copy.deepcopy(route["spec"])
    del spec["rules"][1]["backendRefs"]
    return {"labels": labels, "annotations": route["metadata"].get("annotations"), "spec": spec}


def rayservice(namespace: str, version: str, annotations: dict[str, str]) -> dict[str, Any]:
    body = manifest(namespace, version)
    body["metadata"]["annotations"] = annotations
    return body


async def read_route(stack: Stack, namespace: str, name: str) -> dict[str, Any]:
    route = await read_custom(stack.custom, GATEWAY_GROUP, "httproutes", namespace, name)
    assert route is not None, f"HTTPRoute {namespace}/{name} is gone"
    return route


def label_matches_split(snapshot: RouteSnapshot, index: int) -> bool:
    """The traffic-split label is on exactly while the steered rule holds two clusters' backends."""
    split = len(snapshot.backends(index)) > 1
    return (snapshot.labels.get(LABEL_TRAFFIC_SPLIT) == TRAFFIC_SPLIT_IN_PROGRESS) == split


async def test_an_upgrade_through_a_shared_gateway_and_a_users_route(kube_stack: Stack) -> None:
    stack = kube_stack
    namespace, infra = stack.namespace(), stack.namespace()
    custom_object(stack, infra, "gateways", shared_gateway(infra, admitted=namespace))
    stack.core.create_namespaced_service(namespace, docs_service(namespace))
    custom_object(stack, namespace, "httproutes", user_route(namespace, infra))
    as_written = users_fields(await read_route(stack, namespace, ROUTE))  # with the API server's defaults
    annotations = {ANNOTATION_GATEWAY: f"{infra}/{GATEWAY}", ANNOTATION_HTTPROUTE: f"{namespace}/{ROUTE}"}
    handle = await stack.start(rayservice(namespace, "v1", annotations))
    status = await stack.wait_status(handle, lambda s: bool(sides(s)[0].get("rayClusterName")), within=120)
    old = str(sides(status)[0]["rayClusterName"])

    async def routed_url() -> str | None:
        route = await read_route(stack, namespace, ROUTE)
        gateway = await read_custom(stack.custom, GATEWAY_GROUP, "gateways", infra, GATEWAY)
        steered = RouteSnapshot(0, {}, route["spec"]).backends(1)
        on_v1 = steered == {f"{old}-serve-svc": 100}
        return (
            gateway_url(gateway)
            if on_v1 and user_route_ready(route, NamespacedName(infra, GATEWAY))
            else None
        )

    url = await eventually(routed_url, within=60, what="the user's route steered to v1 and accepted")
    sampler = StatusSampler(lambda: stack.status(handle))
    async with (
        steady_load(url) as load,
        RouteSnapshots(stack.custom, namespace, ROUTE) as route,
        sampler,
    ):
        await load.wait_for_requests(200)
        assert set(load.counts()) == {"v1"}, load.counts()
        await handle.execute_update("apply", rayservice(namespace, "v2", annotations), result_type=dict)
        promoted = await stack.wait_status(
            handle,
            lambda s: (
                sides(s)[0].get("rayClusterName") not in (None, old) and not sides(s)[1].get("rayClusterName")
            ),
            within=UPGRADE_WITHIN_S,
            what="v2 promoted",
        )
        new = str(sides(promoted)[0]["rayClusterName"])

        async def at_rest_on_v2() -> bool | None:
            latest = route.latest()
            return (latest is not None and latest.backends(1) == {f"{new}-serve-svc": 100}) or None

        await eventually(at_rest_on_v2, within=60, what="the route on v2 alone")
        settled = len(load.samples)
        await load.wait_for_requests(settled + 200)
        after = load.samples[settled:]
    weights = [s.backends(1).get(f"{new}-serve-svc", 0) for s in route.seen]
    reported = [percent for _, percent in sampler.traffic_steps(new)]
    report = (
        f"{len(load.samples)} requests, {len(load.failures)} failed; v2's weight on the user's route: "
        f"{weights}; v2's traffic in the status: {reported}"
    )
    print(report)
    assert not load.failures, (load.failures[:5], report)
    assert {sample.version for sample in after} == {"v2"}
    both = [s for s in route.seen if set(s.backends(1)) == {f"{old}-serve-svc", f"{new}-serve-svc"}]
    assert any(min(s.backends(1).values()) > 0 for s in both), "traffic never split"
    assert all(label_matches_split(s, 1) for s in route.seen), [(s.labels, s.backends(1)) for s in route.seen]
    assert all(s.rule(0) == route.seen[0].rule(0) for s in route.seen)  # the user's rule never touched
    # The status reads the weights back from the steered rule (the route's second), not from its first.
    assert reported == sorted(reported), report
    assert reported[-1] == 100, report
    assert any(0 < percent < 100 for percent in reported), report
    final = await read_route(stack, namespace, ROUTE)
    assert users_fields(final) == as_written
    assert LABEL_TRAFFIC_SPLIT not in (final["metadata"].get("labels") or {})

    await handle.execute_update("delete", result_type=dict)

    async def released() -> dict[str, Any] | None:
        found = await read_route(stack, namespace, ROUTE)
        return found if RouteSnapshot(0, {}, found["spec"]).backends(1) == {SERVE_SERVICE: 1} else None

    left = await eventually(released, within=60, what="the route released to the RayService's serve Service")
    assert left["spec"]["rules"][1]["backendRefs"][0]["port"] == 8000
    assert users_fields(left) == as_written
    assert LABEL_TRAFFIC_SPLIT not in (left["metadata"].get("labels") or {})
    assert await read_custom(stack.custom, GATEWAY_GROUP, "gateways", infra, GATEWAY) is not None
    assert await read_custom(stack.custom, GATEWAY_GROUP, "gateways", namespace, f"{NAME}-gateway") is None
    assert (
        await read_custom(stack.custom, GATEWAY_GROUP, "httproutes", namespace, http_route_name(NAME)) is None
    )


async def serve_answers(stack: Stack, namespace: str, cluster: str) -> int | None:
    """How many application requests the cluster's simulated head has answered so far (all its versions);
    None while its head Pod is not there or not listening yet."""
    heads = f"ray.io/cluster={cluster},ray.io/node-type=head"
    pods = (await asyncio.to_thread(stack.core.list_namespaced_pod, namespace, label_selector=heads)).items
    if len(pods) != 1 or pods[0].metadata is None:
        return None
    pod = pods[0].metadata.name
    host = stack.api_client.configuration.host.rstrip("/")
    proxy = f"{host}/api/v1/namespaces/{namespace}/pods/{pod}:{HEAD_METRICS_PORT}/proxy"
    url = proxy + SIMULATION_COUNTERS_PATH
    answer = await through_api_server(stack, "GET", url)
    if answer.status_code != 200:
        return None
    return sum(int(count) for count in answer.json()["serveAnswers"].values())


async def answered_by(stack: Stack, namespace: str, cluster: str) -> int:
    found = await serve_answers(stack, namespace, cluster)
    assert found is not None, f"the head of {cluster} stopped answering"
    return found


def with_plan(body: dict[str, Any]) -> dict[str, Any]:
    body["metadata"]["annotations"] = {ANNOTATION_ROLLOUT: json.dumps(MIRROR_PLAN)}
    return body


async def test_a_mirror_step_copies_its_share_to_the_new_cluster_while_v1_answers(kube_stack: Stack) -> None:
    stack = kube_stack
    namespace = stack.namespace()
    handle = await stack.start(with_plan(manifest(namespace, "v1")))
    status = await stack.wait_status(handle, lambda s: bool(sides(s)[0].get("rayClusterName")), within=120)
    old = str(sides(status)[0]["rayClusterName"])
    url = await routed_gateway_url(stack.custom, namespace, NAME)
    async with (
        steady_load(url) as load,
        RouteSnapshots(stack.custom, namespace, http_route_name(NAME)) as route,
    ):
        await load.wait_for_requests(200)
        assert set(load.counts()) == {"v1"}, load.counts()
        await handle.execute_update("apply", with_plan(manifest(namespace, "v2")), result_type=dict)
        pending = await stack.wait_status(
            handle, lambda s: sides(s)[1].get("rayClusterName") not in (None, "", old), within=60, what="v2"
        )
        new = str(sides(pending)[1]["rayClusterName"])
        mirror = [(f"{new}-serve-svc", MIRROR_PERCENT)]

        async def mirroring() -> bool | None:
            latest = route.latest()
            return (latest is not None and latest.mirrors(0) == mirror) or None

        await eventually(mirroring, within=120, what="the mirror filter on the route")

        async def copies_arrive() -> int | None:
            answered = await serve_answers(stack, namespace, new)
            return answered if answered is not None and answered >= 50 else None

        await eventually(copies_arrive, within=60, what="copies answered by the new cluster")
        window_start, copies_before = time.monotonic(), await answered_by(stack, namespace, new)
        await load.wait_for_requests(len(load.samples) + MIRROR_WINDOW_REQUESTS)
        window_end = time.monotonic()
        copies = await answered_by(stack, namespace, new) - copies_before
        mirror_status = await stack.status(handle)
        still_mirroring = route.latest()
        await handle.execute_update("resume", result_type=dict)
        await stack.wait_status(
            handle,
            lambda s: sides(s)[0].get("rayClusterName") == new and not sides(s)[1].get("rayClusterName"),
            within=UPGRADE_WITHIN_S,
            what="v2 promoted",
        )
    requests = sum(load.counts(window_start, window_end).values())
    share = 100.0 * copies / requests if requests else 0.0
    mirror_on = next(s.at for s in route.seen if s.mirrors(0))
    mirror_off = next(s.at for s in route.seen if s.at > mirror_on and not s.mirrors(0))
    report = (
        f"{len(load.samples)} requests, {len(load.failures)} failed; mirror window: {copies} copies of "
        f"{requests} requests ({share:.1f} %) from {window_start - mirror_on:.1f} s to "
        f"{window_end - mirror_on:.1f} s of the {mirror_off - mirror_on:.1f} s the mirror was on"
    )
    print(report)
    assert not load.failures, (load.failures[:5], report)
    assert still_mirroring is not None
    assert still_mirroring.mirrors(0) == mirror, "the window outlived the mirror"
    assert abs(share - MIRROR_PERCENT) <= MIRROR_TOLERANCE, report
    # Every client answer while the mirror was on came from v1 (answers just before the route write that ended
    # it may already have been routed by the next route: the proxy applies it as the poll sees it).
    assert set(load.counts(mirror_on, mirror_off - 0.25)) == {"v1"}, report
    mirror_conditions = [c for c in mirror_status.get("conditions") or [] if c.get("type") == "RolloutMirror"]
    assert [(c["status"], c["reason"]) for c in mirror_conditions] == [("True", "Mirroring")]
    backend = f"{new}-serve-svc"
    assert not any(s.mirrors(0) and s.backends(0).get(backend, 0) > 0 for s in route.seen), (
        "mirror and weight"
    )
    first_weighted = next(s for s in route.seen if s.backends(0).get(backend, 0) > 0)
    assert first_weighted.at == mirror_off  # the write that gave the new cluster weight ended the mirror
    assert not any(s.mirrors(0) for s in route.seen if s.at >= mirror_off)
    await handle.execute_update("delete", result_type=dict)
