"""The incremental upgrade's route through a shared Gateway and/or a user-owned HTTPRoute
(`raypilot.io/gateway`, `raypilot.io/httproute`; decisions in decisions/rayservice/upgrade/shared_gateway.py,
user_route.py, traffic_route.py). Only RayServices with one of the annotations come here: without them the
pass is KubeRay's, command for command.

Observe (the Gateway, the user's route, the labels of the route's namespace when a listener selects by them),
decide (a problem? the route or patch for this moment), act (create `<rs>-httproute` on the shared Gateway, or
JSON-patch the owned backendRefs of the user's route), and the watch to wait on while a problem lasts or
readiness is not there yet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Final

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.naming import http_route_name
    from models.rayservice import RayService, RayServiceStatuses
    from models.traffic_refs import NamespacedName
    from workflows.decisions.rayservice.conditions import RayServiceEvent
    from workflows.decisions.rayservice.observed_clusters import cluster_names
    from workflows.decisions.rayservice.services import serve_port
    from workflows.decisions.rayservice.upgrade.gateway import is_gateway_ready, is_http_route_ready
    from workflows.decisions.rayservice.upgrade.shared_gateway import (
        attached_to_gateway,
        needs_namespace_labels,
    )
    from workflows.decisions.rayservice.upgrade.traffic_route import (
        RouteProblem,
        TrafficRefs,
        traffic_route_problem,
        with_traffic_route_condition,
    )
    from workflows.decisions.rayservice.upgrade.user_route import (
        RouteOwner,
        released_route_patch,
        route_for_status,
        route_gateway,
        user_route_patch,
        user_route_ready,
    )
    from workflows.decisions.rayservice.watches import Watch, view_key
    from workflows.rayservice.part import RayServicePart

__all__ = ["SharedRouting"]

# A route patch whose `test` failed is decided again on the route as it is now, at most this often per act.
_PATCH_ATTEMPTS: Final = 3
_DEFAULT_SERVE_PORT: Final = 8000


def _key(obj: dict[str, Any] | None) -> NamespacedName | None:
    metadata = (obj or {}).get("metadata") or {}
    return NamespacedName(metadata["namespace"], metadata["name"]) if obj else None


class SharedRouting(RayServicePart):
    problem: RouteProblem | None = None

    def refs(self, rayservice: RayService) -> TrafficRefs:
        return TrafficRefs.of(rayservice.metadata.annotations)

    def _owner(self, rayservice: RayService) -> RouteOwner:
        names = (*cluster_names(self.state.status), *self.state.owned_clusters)
        metadata = rayservice.metadata
        return RouteOwner(
            metadata.name, metadata.namespace, tuple(name for name in dict.fromkeys(names) if name)
        )

    def _route_key(self, rayservice: RayService, refs: TrafficRefs) -> NamespacedName:
        if refs.route is not None:
            return refs.route
        return NamespacedName(rayservice.metadata.namespace, http_route_name(rayservice.metadata.name))

    def _gateway_key(self, refs: TrafficRefs) -> NamespacedName | None:
        return route_gateway(self.world.route_object, refs.gateway) if refs.route else refs.gateway

    # ---- observe ---------------------------------------------------------------------------------------

    async def _observe(self, rayservice: RayService, refs: TrafficRefs) -> None:
        """Read what no wait has brought yet: the user's route, the Gateway it attaches to, the labels of the
        route's namespace when a listener selects namespaces by label."""
        world, calls = self.world, self.calls
        if refs.route is not None and _key(world.route_object) != refs.route:
            world.route_object = await calls.get_http_route_at(refs.route.namespace, refs.route.name)
        gateway = self._gateway_key(refs)
        if gateway is not None and _key(world.gateway_object) != gateway:
            world.gateway_object = await calls.get_gateway_at(gateway.namespace, gateway.name)
        if needs_namespace_labels(world.gateway_object) and world.namespace_labels is None:
            namespace = self._route_key(rayservice, refs).namespace
            world.namespace_labels = await calls.get_namespace_labels(namespace)

    # ---- act -------------------------------------------------------------------------------------------

    async def reconcile(
        self,
        rayservice: RayService,
        desired: dict[str, Any] | None,
        write_own_route: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any] | None:
        """The route for this moment through the shared objects; returns it as the status reads its weights
        (None while there is a problem or no active cluster). `desired`: KubeRay's `<rs>-httproute`;
        `write_own_route`: how the incremental upgrade creates or updates it."""
        refs = self.refs(rayservice)
        await self._observe(rayservice, refs)
        owner = self._owner(rayservice)
        world = self.world
        self.problem = traffic_route_problem(
            refs, owner, world.route_object, world.gateway_object, world.namespace_labels
        )
        if self.problem is not None or desired is None:
            return None
        if refs.route is None:
            assert refs.gateway is not None
            attached = attached_to_gateway(desired, refs.gateway)
            assert attached is not None
            return await write_own_route(attached)
        backends = list(desired["spec"]["rules"][0]["backendRefs"])
        await self._patch_user_route(refs.route, lambda route: user_route_patch(route, owner, backends))
        return route_for_status(world.route_object, owner)

    async def _patch_user_route(
        self, ref: NamespacedName, decide: Callable[[dict[str, Any]], list[dict[str, Any]] | None]
    ) -> None:
        """Patch the user's route as `decide` says; a patch whose `test` failed is decided again on the route
        the activity read back."""
        for _ in range(_PATCH_ATTEMPTS):
            route = self.world.route_object
            patch = decide(route) if route is not None else None
            if patch is None:
                return
            result = await self.calls.patch_http_route(ref.namespace, ref.name, patch)
            self.world.route_object = result.route
            if result.applied:
                return

    async def release(self, rayservice: RayService) -> None:
        """At the RayService's deletion: the user's route points at `<rs>-serve-svc` again and loses the
        traffic-split label (a shared Gateway is never touched)."""
        refs = self.refs(rayservice)
        if refs.route is None:
            return
        owner = self._owner(rayservice)
        active = self.world.cluster(self.state.status.active_service_status.ray_cluster_name, rayservice)
        port = serve_port(active) if active is not None else _DEFAULT_SERVE_PORT
        try:
            self.world.route_object = await self.calls.get_http_route_at(
                refs.route.namespace, refs.route.name
            )
            await self._patch_user_route(refs.route, lambda route: released_route_patch(route, owner, port))
        except ActivityError as error:
            # A permanent refusal (e.g. the worker may no longer patch the route) must not hold the deletion:
            # the route keeps the clusters' backendRefs, and the log says so.
            workflow.logger.warning("HTTPRoute %s not released: %s", refs.route, error.cause or error)

    # ---- readiness, status, waits ------------------------------------------------------------------------

    def ready(self, rayservice: RayService) -> tuple[bool, bool]:
        """(the Gateway ready, the route ready on it); neither while there is a problem."""
        refs = self.refs(rayservice)
        if self.problem is not None:
            return False, False
        gateway = self._gateway_key(refs)
        route = self.world.route_object
        if refs.route is not None:
            return is_gateway_ready(self.world.gateway_object), user_route_ready(route, gateway)
        assert gateway is not None
        return is_gateway_ready(self.world.gateway_object), is_http_route_ready(
            gateway.name, gateway.namespace, route
        )

    def with_condition(
        self, status: RayServiceStatuses, now: datetime
    ) -> tuple[RayServiceStatuses, list[RayServiceEvent]]:
        return with_traffic_route_condition(status, self.problem, now)

    def watches(self, rayservice: RayService) -> list[Watch]:
        """The Gateway and the route (and the labels of the route's namespace) while a problem lasts or they
        are not ready."""
        refs = self.refs(rayservice)
        if self.problem is None and all(self.ready(rayservice)):
            return []
        gateway = self._gateway_key(refs) or refs.gateway
        route = self._route_key(rayservice, refs)
        if gateway is None:  # a user route naming no Gateway: watch the route alone through its own name
            gateway = route
        target = f"{gateway},{route}"
        if needs_namespace_labels(self.world.gateway_object):
            target += f",{route.namespace}"
        view = self.world.gateway.view if self.world.gateway is not None else None
        return [Watch("gateway", target, view_key(view))]
