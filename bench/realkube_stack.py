"""The real stack that the benches beside KubeRay (P2K, P3K) share within one run: etcd, kube-apiserver,
kube-controller-manager, kube-proxy, KubeRay's operator v1.5.0 in a pod, raypilot's node agent running
simulated Ray, and raypilot installed with deploy/'s RBAC (sandbox/realkube); KubeRay's deletion-rules gate
on. The first bench that asks starts
it (tens of seconds); it stops when the run ends."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bench.suite import BenchContext
from sandbox.realkube.controlplane import ControlPlane
from sandbox.realkube.install import Installed, install_raypilot
from sandbox.realkube.kuberay import DELETION_RULES_GATE
from sandbox.realkube.stack import real_cluster

KEY = "real stack"


@dataclass(frozen=True)
class SharedRealStack:
    plane: ControlPlane
    installed: Installed


async def shared_real_stack(context: BenchContext) -> SharedRealStack:
    found = context.shared.get(KEY)
    if isinstance(found, SharedRealStack):
        return found
    directory = context.scratch("real-stack")
    stack = real_cluster(
        directory / "kube", directory / "node", ray="simulated", kuberay_feature_gates=DELETION_RULES_GATE
    )
    plane = await asyncio.to_thread(stack.__enter__)
    context.resources.push_async_callback(asyncio.to_thread, stack.__exit__, None, None, None)
    shared = SharedRealStack(plane, await asyncio.to_thread(install_raypilot, plane))
    context.shared[KEY] = shared
    return shared
