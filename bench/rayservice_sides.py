"""Who runs a RayService in an upgrade bench (bench/upgrades.py): raypilot's workflow, or KubeRay's operator
reconciling the same manifest as a `ray.io/v1` RayService on the same real stack. Both answer the same
status shape (KubeRay's), so the bench waits on the same conditions for either.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, Literal, Protocol, cast

from kubernetes import client as k8s
from temporalio.client import WorkflowHandle

from sandbox.realkube.kuberay import KUBERAY_POD
from sandbox.testing import ConditionTimeout, wait_until
from tests.integration.stack import Stack

SideKind = Literal["raypilot", "kuberay"]
Holds = Callable[[dict[str, Any]], bool]
INCREMENTAL_UPGRADE_GATE = "RayServiceIncrementalUpgrade"
GONE_WITHIN_S = 180.0


class RayServiceSide(Protocol):
    """One RayService's controller, as an upgrade bench drives it."""

    async def deploy(self, manifest: dict[str, Any]) -> None: ...

    async def apply(self, manifest: dict[str, Any]) -> None: ...

    async def status(self) -> dict[str, Any]: ...

    async def wait_status(self, holds: Holds, *, within: float, what: str) -> dict[str, Any]: ...

    async def delete(self) -> None: ...


class RaypilotSide:
    """raypilot's RayService workflow, started on the stack's worker."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self._handle: WorkflowHandle[Any, Any] | None = None

    @property
    def handle(self) -> WorkflowHandle[Any, Any]:
        assert self._handle is not None, "deploy first"
        return self._handle

    async def deploy(self, manifest: dict[str, Any]) -> None:
        self._handle = await self.stack.start(manifest)

    async def apply(self, manifest: dict[str, Any]) -> None:
        await self.handle.execute_update("apply", manifest)

    async def status(self) -> dict[str, Any]:
        return await self.stack.status(self.handle)

    async def wait_status(self, holds: Holds, *, within: float, what: str) -> dict[str, Any]:
        return await self.stack.wait_status(self.handle, holds, within=within, what=what)

    async def delete(self) -> None:
        await self.handle.execute_update("delete")


class KubeRaySide:
    """The manifest as a `ray.io/v1` RayService, reconciled by KubeRay's operator on the stack."""

    def __init__(self, stack: Stack, namespace: str, name: str) -> None:
        self.stack, self.namespace, self.name = stack, namespace, name

    def _read(self) -> dict[str, Any]:
        found = self.stack.custom.get_namespaced_custom_object(
            "ray.io", "v1", self.namespace, "rayservices", self.name
        )
        return cast(dict[str, Any], found)

    async def deploy(self, manifest: dict[str, Any]) -> None:
        await asyncio.to_thread(
            self.stack.custom.create_namespaced_custom_object,
            "ray.io",
            "v1",
            self.namespace,
            "rayservices",
            manifest,
        )

    async def apply(self, manifest: dict[str, Any]) -> None:
        """The new spec, as `kubectl apply` sends it; the operator's status writes between the read and the
        replace only conflict, and the replace is tried again on the fresh object."""
        for _ in range(10):
            current = await asyncio.to_thread(self._read)
            current["spec"] = manifest["spec"]
            try:
                await asyncio.to_thread(
                    self.stack.custom.replace_namespaced_custom_object,
                    "ray.io",
                    "v1",
                    self.namespace,
                    "rayservices",
                    self.name,
                    current,
                )
                return
            except k8s.ApiException as error:
                if error.status != 409:
                    raise
        raise RuntimeError(f"RayService {self.namespace}/{self.name}: every replace conflicted")

    async def status(self) -> dict[str, Any]:
        status: dict[str, Any] = (await asyncio.to_thread(self._read)).get("status") or {}
        return status

    async def wait_status(self, holds: Holds, *, within: float, what: str) -> dict[str, Any]:
        last: dict[str, Any] = {}

        async def probe() -> dict[str, Any] | None:
            nonlocal last
            last = await self.status()
            return last if holds(last) else None

        try:
            return await wait_until(probe, within=within, interval=0.2, what=f"KubeRay: {what}")
        except ConditionTimeout as timeout:
            raise ConditionTimeout(f"{timeout}; last status {json.dumps(last)[:3000]}") from None

    async def delete(self) -> None:
        """Deletes the RayService; the garbage collector deletes what it owns (its RayClusters, Services,
        Gateway, HTTPRoute)."""
        await asyncio.to_thread(
            self.stack.custom.delete_namespaced_custom_object,
            "ray.io",
            "v1",
            self.namespace,
            "rayservices",
            self.name,
        )


def service_side(kind: SideKind, stack: Stack, namespace: str, name: str) -> RayServiceSide:
    return RaypilotSide(stack) if kind == "raypilot" else KubeRaySide(stack, namespace, name)


async def clusters_gone(stack: Stack, namespace: str) -> None:
    """Waits until `namespace` holds no RayCluster and no Pod: the next run starts with no Ray node of this
    one still using the machine's two cores."""

    def gone() -> bool:
        found = stack.custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters")
        clusters = cast(dict[str, Any], found)
        return not clusters["items"] and not stack.core.list_namespaced_pod(namespace).items

    # Blocking reads in the loop: the load has stopped by then, nothing else is being timed.
    what = f"{namespace}'s RayClusters and Pods gone"
    await wait_until(gone, within=GONE_WITHIN_S, interval=0.5, what=what)


def enabled_gates(command: list[str]) -> set[str]:
    """The gates `--feature-gates=A=true,B=false` turns on, from an operator's command line."""
    gates: set[str] = set()
    for argument in command:
        if argument.startswith("--feature-gates="):
            for item in argument.removeprefix("--feature-gates=").split(","):
                gate, _, value = item.partition("=")
                if value.strip().lower() == "true":
                    gates.add(gate.strip())
    return gates


def kuberay_gates(stack: Stack) -> set[str]:
    """The feature gates KubeRay's operator pod on the stack runs with."""
    pod = stack.core.read_namespaced_pod(KUBERAY_POD, "default")
    assert pod.spec is not None, "KubeRay's pod has no spec"
    return enabled_gates(list(pod.spec.containers[0].command or []))
