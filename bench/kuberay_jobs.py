"""What P7K and P8 share to run a side of KubeRay beside raypilot on the real stack: KubeRay's operator
process and a head Pod's processes found under the node agent (/proc), `ray.io/v1` RayJobs created and
deleted by the hundred as a user's `kubectl apply` would, a namespace of its own with a RayCluster of
simulated Ray for each side, and the CPU and memory of a few process trees over a window.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kubernetes.client import ApiException

from bench.jobs_support import SHARED_CLUSTER, START_CONCURRENCY, SharedCluster, node_agent_pid
from bench.p0_stack_idle import cpu_seconds, process_children, rss_mib, tree
from bench.progress import Progress
from bench.realkube_stack import SharedRealStack
from bench.suite import BenchContext
from sandbox.testing import raycluster_manifest, wait_until
from tests.integration.rayjob_support import create_raycluster, head_pod_name
from tests.integration.stack import Stack

KUBERAY_BINARY = b"kuberay-operator"


def _cmdline(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _environ(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def kuberay_operator_pid(real: SharedRealStack) -> int:
    """KubeRay's operator on this stack: the container process of its pod, a child of this stack's node agent
    (other stacks on the machine run the same binary). Read anew each time: P2K's restart makes a new one."""
    agent = node_agent_pid(real)
    if agent is not None:
        for pid in process_children().get(agent, []):
            command = _cmdline(pid)
            if command and command[0].endswith(KUBERAY_BINARY):
                return pid
    raise RuntimeError("KubeRay's operator process was not found under the stack's node agent")


def pod_pids(real: SharedRealStack, pod: str) -> list[int]:
    """The processes of `pod`'s containers on this stack's node: those under the node agent whose
    environment names the pod (HOSTNAME, as a container's)."""
    agent = node_agent_pid(real)
    if agent is None:
        return []
    hostname = f"HOSTNAME={pod}".encode()
    children = process_children()
    return [pid for pid in tree(agent, children) if pid != agent and hostname in _environ(pid)]


@dataclass(frozen=True)
class TreeUse:
    """What a few processes (each with its descendants) used over a window: CPU seconds, RSS at its end."""

    cpu_s: float
    rss_mib: float


class TreeMeter:
    """CPU seconds of named process trees from `start()` to `stop()`; RSS at the stop."""

    def __init__(self, roots: Mapping[str, Sequence[int]]) -> None:
        self.roots = roots
        self.before: dict[str, float] = {}

    def _trees(self) -> dict[str, list[int]]:
        children = process_children()
        return {
            name: sorted({p for pid in pids for p in tree(pid, children)})
            for name, pids in self.roots.items()
        }

    def start(self) -> None:
        self.before = {name: cpu_seconds(pids) for name, pids in self._trees().items()}

    def stop(self) -> dict[str, TreeUse]:
        trees = self._trees()
        return {
            name: TreeUse(cpu_seconds(pids) - self.before[name], rss_mib(pids))
            for name, pids in trees.items()
        }


async def create_rayjobs(stack: Stack, manifests: Sequence[dict[str, Any]], label: str) -> None:
    """Create `ray.io/v1` RayJobs as `kubectl apply` would, START_CONCURRENCY at a time, with a progress
    bar (the client blocks: each create in a thread of a pool that size)."""
    custom = stack.custom
    loop = asyncio.get_running_loop()

    def one(manifest: dict[str, Any]) -> None:
        namespace = manifest["metadata"]["namespace"]
        custom.create_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", manifest)

    with ThreadPoolExecutor(START_CONCURRENCY) as pool, Progress(label, len(manifests)) as bar:

        async def created(manifest: dict[str, Any]) -> None:
            await loop.run_in_executor(pool, one, manifest)
            bar.advance()

        await asyncio.gather(*(created(manifest) for manifest in manifests))


def listed(stack: Stack, namespace: str, plural: str) -> list[dict[str, Any]]:
    found = cast(
        dict[str, Any], stack.custom.list_namespaced_custom_object("ray.io", "v1", namespace, plural)
    )
    items: list[dict[str, Any]] = found["items"]
    return items


async def delete_rayjobs(stack: Stack, namespace: str, within: float) -> None:
    """Every RayJob of `namespace` deleted and gone (KubeRay's finalizer stops each one's Ray job first)."""

    def delete_the_rest() -> bool:
        # A deletecollection of thousands of RayJobs outlasts the API server's request timeout (60 s): it
        # answers 504 with part of them deleted. Asked again while any is left, it goes on with the rest.
        try:
            stack.custom.delete_collection_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs")
        except ApiException as error:
            if error.status != 504:
                raise
        left = stack.custom.list_namespaced_custom_object("ray.io", "v1", namespace, "rayjobs", limit=1)
        return not cast(dict[str, Any], left)["items"]

    async def gone() -> bool:
        return await asyncio.to_thread(delete_the_rest)

    _: bool = await wait_until(gone, within=within, interval=5.0, what=f"the RayJobs of {namespace} deleted")


@contextlib.asynccontextmanager
async def side_cluster(context: BenchContext, real: SharedRealStack) -> AsyncIterator[SharedCluster]:
    """A namespace of its own with a ready RayCluster of simulated Ray (one head), for the block; the
    cluster is deleted at its end, so that its head's process and the jobs it holds do not outlive it."""
    async with real.admin_stack(context.client, "") as stack:
        namespace = stack.namespace()
        manifest = raycluster_manifest(SHARED_CLUSTER, namespace, workers=0)
        await create_raycluster(stack, manifest, within=120)
        try:
            yield SharedCluster(real, stack, namespace, head_pod_name(stack, namespace, SHARED_CLUSTER))
        finally:
            with contextlib.suppress(ApiException):
                stack.custom.delete_namespaced_custom_object(
                    "ray.io", "v1", namespace, "rayclusters", SHARED_CLUSTER
                )
