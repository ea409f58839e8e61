"""Following an upgrade while load runs: the HTTPRoute's weights (cutting the load's samples into one segment
per weight setting, so that a test can compare the share each version got with the weight the route gave it),
the whole route per distinct state (its labels, filters and every rule: `RouteSnapshots`) and the workflow's
status (the traffic steps as the workflow recorded them, the conditions it showed)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Self

from kubernetes import client as k8s

from models.naming import gateway_name, http_route_name
from raypilot.cli.demo_rayservice import gateway_url
from raypilot.cli.demo_support import read_custom
from raypilot.load import FAILED, SteadyLoad
from sandbox.testing import wait_until
from workflows.decisions.rayservice.upgrade.gateway import is_http_route_ready

GATEWAY_GROUP = "gateway.networking.k8s.io"


async def routed_gateway_url(
    custom: k8s.CustomObjectsApi, namespace: str, rayservice: str, within: float = 60
) -> str:
    """The URL of the RayService's Gateway once the Gateway is programmed and has accepted the HTTPRoute.
    The status says Running one pass before the HTTPRoute exists (its backend is the active cluster's, and the
    first cluster becomes active in the status that says Running, as in KubeRay); until then the Gateway
    answers 404."""
    gateway, route = gateway_name(rayservice), http_route_name(rayservice)

    async def probe() -> str | None:
        found = gateway_url(await read_custom(custom, GATEWAY_GROUP, "gateways", namespace, gateway))
        route_object = await read_custom(custom, GATEWAY_GROUP, "httproutes", namespace, route)
        return found if is_http_route_ready(gateway, namespace, route_object) else None

    routed: str = await wait_until(
        probe, within=within, interval=0.1, what="Gateway programmed, HTTPRoute accepted"
    )
    return routed


def route_weights(route: dict[str, Any]) -> dict[str, int]:
    """Backend Service name -> weight, over every rule of the route."""
    weights: dict[str, int] = {}
    for rule in (route.get("spec") or {}).get("rules") or []:
        for ref in rule.get("backendRefs") or []:
            weights[str(ref["name"])] = int(ref.get("weight", 1))
    return weights


@dataclass(frozen=True)
class WeightChange:
    at: float  # time.monotonic() when the poll saw the new weights
    weights: dict[str, int]

    def weight_of(self, backend: str) -> int:
        return self.weights.get(backend, 0)


class BackgroundPoll:
    """Runs `_look` every `period_s` in a task for the time of an `async with` block."""

    period_s: float
    _task: asyncio.Task[None] | None = None

    async def _look(self) -> None:
        raise NotImplementedError

    async def _poll(self) -> None:
        while True:
            await self._look()
            await asyncio.sleep(self.period_s)

    async def __aenter__(self) -> Self:
        self._task = asyncio.create_task(self._poll())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


@dataclass
class RoutePoll(BackgroundPoll):
    """Reads an HTTPRoute every `period_s` (through the blocking client, off the event loop) and hands each
    read to `_saw` (None: the route does not exist). A poll, not a watch: it cannot silently miss changes
    after a dropped stream."""

    custom: k8s.CustomObjectsApi
    namespace: str
    name: str
    period_s: float = 0.05

    async def _look(self) -> None:
        self._saw(await read_custom(self.custom, GATEWAY_GROUP, "httproutes", self.namespace, self.name))

    def _saw(self, route: dict[str, Any] | None) -> None:
        raise NotImplementedError


@dataclass
class RouteRecorder(RoutePoll):
    """Records every change of the HTTPRoute's weights; 50 ms of uncertainty is far below the segment
    trimming."""

    changes: list[WeightChange] = field(default_factory=list)

    def _saw(self, route: dict[str, Any] | None) -> None:
        weights = route_weights(route) if route is not None else {}
        if not self.changes or self.changes[-1].weights != weights:
            self.changes.append(WeightChange(time.monotonic(), weights))

    def latest(self) -> WeightChange | None:
        return self.changes[-1] if self.changes else None


@dataclass(frozen=True)
class Segment:
    """The samples answered while the route had one weight for `backend`."""

    start: float
    end: float
    weight: int
    counts: Counter[str]

    def share(self, version: str) -> float:
        answered = sum(n for name, n in self.counts.items() if name != FAILED)
        return 100.0 * self.counts.get(version, 0) / answered if answered else 0.0

    @property
    def answered(self) -> int:
        return sum(n for name, n in self.counts.items() if name != FAILED)


def segments(
    changes: list[WeightChange],
    backend: str,
    load: SteadyLoad,
    until: float,
    trim_start_s: float = 0.4,
    trim_end_s: float = 0.1,
) -> list[Segment]:
    """One segment per distinct weight of `backend` (consecutive changes that leave it alone are merged),
    trimmed at both edges: the proxy applies a new route a little after the API server has it, and answers
    arriving just after a change were mostly routed before it."""
    boundaries: list[tuple[float, int]] = []
    for change in changes:
        weight = change.weight_of(backend)
        if not boundaries or boundaries[-1][1] != weight:
            boundaries.append((change.at, weight))
    result = []
    for index, (start, weight) in enumerate(boundaries):
        end = boundaries[index + 1][0] if index + 1 < len(boundaries) else until
        since, before = start + trim_start_s, end - trim_end_s
        if before > since:
            result.append(Segment(start, end, weight, load.counts(since, before)))
    return result


@dataclass
class StatusSampler(BackgroundPoll):
    """Queries the workflow's status every `period_s` and keeps each distinct one with when it was seen."""

    query: Callable[[], Awaitable[dict[str, Any]]]
    period_s: float = 0.25
    seen: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    async def _look(self) -> None:
        status = await self.query()
        if not self.seen or self.seen[-1][1] != status:
            self.seen.append((time.monotonic(), status))

    def traffic_steps(self, cluster: str) -> list[tuple[datetime, int]]:
        """(lastTrafficMigratedTime, trafficRoutedPercent) of `cluster` on whichever side it was (a promoted
        cluster keeps its times), one entry per distinct migration time: its steps in workflow time."""
        steps: list[tuple[datetime, int]] = []
        for _, status in self.seen:
            for side in ("activeServiceStatus", "pendingServiceStatus"):
                entry = status.get(side) or {}
                migrated = entry.get("lastTrafficMigratedTime")
                if entry.get("rayClusterName") != cluster or not migrated:
                    continue
                at = datetime.fromisoformat(str(migrated).replace("Z", "+00:00"))
                percent = int(entry.get("trafficRoutedPercent") or 0)
                if not steps or steps[-1][0] != at:
                    steps.append((at, percent))
                elif steps[-1][1] != percent:
                    steps[-1] = (at, percent)
        return steps

    def conditions_seen(self, kind: str) -> set[tuple[str, str]]:
        """Every (status, reason) the condition `kind` had in the sampled statuses."""
        return {
            (str(c.get("status")), str(c.get("reason")))
            for _, status in self.seen
            for c in status.get("conditions") or []
            if c.get("type") == kind
        }


@dataclass(frozen=True)
class RouteSnapshot:
    """An HTTPRoute as a poll saw it: its labels and spec, and when (time.monotonic())."""

    at: float
    labels: dict[str, str]
    spec: dict[str, Any]

    def rule(self, index: int) -> dict[str, Any]:
        rules = self.spec.get("rules") or []
        return dict(rules[index]) if index < len(rules) else {}

    def backends(self, index: int) -> dict[str, int]:
        """Backend Service name -> weight in rule `index`."""
        return {
            str(ref["name"]): int(ref.get("weight", 1)) for ref in self.rule(index).get("backendRefs") or []
        }

    def mirrors(self, index: int) -> list[tuple[str, int]]:
        """(backend Service, percent) of rule `index`'s RequestMirror filters."""
        return [
            (str(f["requestMirror"]["backendRef"]["name"]), int(f["requestMirror"].get("percent", 100)))
            for f in self.rule(index).get("filters") or []
            if f.get("type") == "RequestMirror"
        ]


@dataclass
class RouteSnapshots(RoutePoll):
    """Keeps each distinct (labels, spec) the HTTPRoute had, with when it was first seen: the whole route,
    for tests about more than its weights (filters, labels, a user's fields)."""

    seen: list[RouteSnapshot] = field(default_factory=list)

    def _saw(self, route: dict[str, Any] | None) -> None:
        if route is None:
            return
        labels = dict((route.get("metadata") or {}).get("labels") or {})
        spec = dict(route.get("spec") or {})
        if not self.seen or (self.seen[-1].labels, self.seen[-1].spec) != (labels, spec):
            self.seen.append(RouteSnapshot(time.monotonic(), labels, spec))

    def latest(self) -> RouteSnapshot | None:
        return self.seen[-1] if self.seen else None
