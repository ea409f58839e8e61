"""`raypilot adopt rayservice|rayjob/NAMESPACE/NAME -f FILE`: take over what KubeRay left after `kubectl
delete rayservice.ray.io/NAME --cascade=orphan` (or a rayjob; raypilot.adopt), then apply the manifest (as
`raypilot apply`) so that the workflow's first run starts from the cluster that serves, or continues the Ray
job that runs. Without CRDs; the controller does the same for a `raypilot.io` object."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from kubernetes import client as k8s
from kubernetes.config.config_exception import ConfigException

from activities.kubernetes.client import load_kube_configuration
from models.manifest import ManifestError, load_manifest_text, parse_manifest
from models.naming import KIND_RAYJOB, KIND_RAYSERVICE, ObjectRef
from models.rayjob import RayJob
from models.source import ANNOTATION_ADOPTED_CLUSTER, ANNOTATION_ADOPTED_RAYJOB
from models.validation import validate
from raypilot.adopt.kube import adopt_rayjob_leftovers, adopt_rayservice_leftovers
from raypilot.cli.apply import apply_manifest, feature_gates
from raypilot.cli.common import Console, parse_ref
from raypilot.runs.errors import CommandError, rejected


async def adopt_command(ref_text: str, filename: str, console: Console) -> int:
    ref = parse_ref(ref_text)
    if ref.kind not in (KIND_RAYJOB, KIND_RAYSERVICE):
        raise rejected("raypilot adopt: only a rayservice or a rayjob can be adopted")
    try:
        text = console.stdin_text() if filename == "-" else await asyncio.to_thread(Path(filename).read_text)
        manifest = load_manifest_text(text)
        parsed = parse_manifest(manifest)
    except (ManifestError, OSError) as error:
        raise rejected(f"{filename}: {error}") from None
    meta = parsed.metadata
    if (parsed.kind, meta.namespace, meta.name) != (ref.kind, ref.namespace, ref.name):
        raise rejected(f"{filename} is {parsed.kind.lower()}/{meta.namespace}/{meta.name}")
    message = validate(parsed, feature_gates(console))
    if message is not None:
        raise rejected(message)
    try:
        api_client = k8s.ApiClient(load_kube_configuration(console.env))
    except (ConfigException, OSError) as error:
        raise CommandError(f"Kubernetes configuration: {error}") from None
    try:
        if isinstance(parsed, RayJob):
            return await _adopt_rayjob(api_client, parsed, manifest, ref, console)
        plan = await asyncio.to_thread(adopt_rayservice_leftovers, api_client, parsed, None)
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


async def _adopt_rayjob(
    api_client: k8s.ApiClient, job: RayJob, manifest: dict[str, Any], ref: ObjectRef, console: Console
) -> int:
    """A RayJob's leftovers taken over (or refused, saying why: raypilot.adopt.rayjob); its run continues
    the Ray job KubeRay started instead of submitting it again."""
    plan = await asyncio.to_thread(adopt_rayjob_leftovers, api_client, job, None)
    if plan.refusal is not None:
        raise rejected(f"raypilot adopt: {plan.refusal}")
    adopted = plan.adopted
    if adopted is None:
        console.out(f"nothing KubeRay made for rayjob/{ref.namespace}/{ref.name} is left to adopt")
    else:
        what = ", ".join(f"{patch.kind} {patch.name}" for patch in plan.patches)
        console.out(f"adopted {what}; Ray job {adopted.job_id or '(not submitted yet)'} continues")
        manifest.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION_ADOPTED_RAYJOB] = (
            adopted.annotation()
        )
    return await apply_manifest(ref, manifest, console)
