"""`raypilot adopt rayservice/NAMESPACE/NAME -f FILE`: take over what KubeRay left after `kubectl delete
rayservice.ray.io/NAME --cascade=orphan` (raypilot.adopt), then apply the manifest (as `raypilot apply`) so
that the workflow's first run starts from the cluster that serves. Without CRDs; the controller does the same
for a `raypilot.io` RayService."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubernetes import client as k8s
from kubernetes.config.config_exception import ConfigException

from activities.kubernetes_client import load_kube_configuration
from models.manifest import ManifestError, load_manifest_text, parse_rayservice
from models.naming import KIND_RAYJOB, KIND_RAYSERVICE
from models.source import ANNOTATION_ADOPTED_CLUSTER
from models.validation import validate
from raypilot.adopt.kube import adopt_rayservice_leftovers
from raypilot.adopt.rayjob import rayjob_leftover_selector
from raypilot.cli.apply import apply_manifest, feature_gates
from raypilot.cli.common import CommandError, Console, parse_ref, rejected


def rayjob_refusal(namespace: str, name: str) -> str:
    """Why (raypilot.adopt.rayjob); the controller says the same on a raypilot.io RayJob while KubeRay's
    leftovers of it exist."""
    return (
        "raypilot adopt: a RayJob cannot be adopted: what KubeRay leaves of it does not record its Ray job's "
        "submission id, and starting afresh would run the entrypoint a second time. Wait for its Ray job to "
        "end if it must, delete what KubeRay left (kubectl delete rayclusters.ray.io,jobs.batch -n "
        f"{namespace} -l {rayjob_leftover_selector(name)}), then `raypilot apply` it"
    )


async def adopt_command(ref_text: str, filename: str, console: Console) -> int:
    ref = parse_ref(ref_text)
    if ref.kind == KIND_RAYJOB:
        raise rejected(rayjob_refusal(ref.namespace, ref.name))
    if ref.kind != KIND_RAYSERVICE:
        raise rejected("raypilot adopt: only a rayservice can be adopted yet")
    try:
        text = console.stdin_text() if filename == "-" else await asyncio.to_thread(Path(filename).read_text)
        manifest = load_manifest_text(text)
        rayservice = parse_rayservice(manifest)
    except (ManifestError, OSError) as error:
        raise rejected(f"{filename}: {error}") from None
    if (rayservice.metadata.namespace, rayservice.metadata.name) != (ref.namespace, ref.name):
        raise rejected(f"{filename} is rayservice/{rayservice.metadata.namespace}/{rayservice.metadata.name}")
    message = validate(rayservice, feature_gates(console))
    if message is not None:
        raise rejected(message)
    try:
        api_client = k8s.ApiClient(load_kube_configuration(console.env))
    except (ConfigException, OSError) as error:
        raise CommandError(f"Kubernetes configuration: {error}") from None
    try:
        plan = await asyncio.to_thread(adopt_rayservice_leftovers, api_client, rayservice, None)
    finally:
        api_client.close()
    if plan.cluster:
        kept = "kept as it is" if plan.spec_matches else "its spec differs: the workflow upgrades it"
        console.out(f"adopted RayCluster {plan.cluster} ({kept}) and {len(plan.patches) - 1} other objects")
        manifest.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION_ADOPTED_CLUSTER] = (
            plan.cluster
        )
    else:
        console.out(f"nothing KubeRay made for rayservice/{ref.namespace}/{ref.name} is left to adopt")
    return await apply_manifest(ref, manifest, console)
