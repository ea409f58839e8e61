"""`raypilot apply -f SOURCE...`: every document of every source, as `kubectl apply -f` takes them.

Read all (files, directories, repeated -f, stdin) -> decide for every document what applying it means, and
check it (KubeRay's validation for a Ray object, a name or generateName for any object, the kind served and
the namespace existing when the CLI can reach Kubernetes): one bad document rejects the whole input with
nothing applied -> apply each in order, a RayJob/RayService through its workflow (`apply_manifest`), any
other object to Kubernetes with server-side apply. A failure while applying one object is reported and the
others still go, as with kubectl; the exit status is then the worst one.

Without any Kubernetes configuration (the worker has the cluster access, e.g. the CLI talks only to Temporal
Cloud) Ray objects are still applied, unchecked against the cluster: their workflows fail or wait with the
cluster's answer, as they did before. Other objects need the cluster and are rejected then.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

from kubernetes.client.exceptions import ApiException
from temporalio.service import RPCError

from activities.kubernetes.resources import Resource
from models.manifest import ManifestError
from models.naming import KIND_RAYJOB, ObjectRef
from raypilot.adopt.kube import rayjob_unadopted_leftovers
from raypilot.adopt.rayjob import apply_refusal
from raypilot.cli.apply import apply_manifest, feature_gates
from raypilot.cli.apply_kubernetes import ClusterAccess, api_message, kubernetes_configured
from raypilot.cli.apply_plan import (
    CronDocument,
    KubeDocument,
    PlannedDocument,
    RayDocument,
    namespaces_to_check,
    planned_document,
)
from raypilot.cli.apply_rollout import rollout_annotation_from_file, with_rollout
from raypilot.cli.apply_sources import SourceDocument, read_documents
from raypilot.cli.common import Console
from raypilot.cli.cronjob import CronJobRef, apply_cronjob
from raypilot.runs.errors import EXIT_FAILURE, EXIT_OK, CommandError, rejected


def planned_input(documents: Sequence[SourceDocument], console: Console) -> list[PlannedDocument]:
    """Every document checked and planned; the first bad one rejects the input (named when there are
    several documents)."""
    gates = feature_gates(console)
    rand = random.SystemRandom()
    plan: list[PlannedDocument] = []
    for document in documents:
        try:
            plan.append(planned_document(document.body, document.origin, gates, rand))
        except ManifestError as error:
            raise rejected(f"{document.origin}: {error}" if len(documents) > 1 else str(error)) from None
    return plan


def checked_against_cluster(access: ClusterAccess, plan: Sequence[PlannedDocument]) -> dict[int, Resource]:
    """The resource of every Kubernetes document (by its index in the plan), after checking that the cluster
    serves each kind and that every namespace used exists; a rejection otherwise."""
    resources: dict[int, Resource] = {}
    cluster_scoped: set[tuple[str, str]] = set()
    for index, item in enumerate(plan):
        if isinstance(item, KubeDocument):
            resource = access.resource_for(item.api_version, item.kind)
            if resource is None:
                raise rejected(
                    f'{item.origin}: no matches for kind "{item.kind}" in version "{item.api_version}" '
                    "(ensure CRDs are installed first)"
                )
            resources[index] = resource
            if not resource.namespaced:
                cluster_scoped.add((item.api_version, item.kind))
    for namespace in namespaces_to_check(plan, frozenset(cluster_scoped)):
        message = access.missing_namespace(namespace)
        if message is not None:
            raise rejected(message)
    return resources


async def apply_sources(sources: Sequence[str], console: Console, rollout: str | None = None) -> int:
    documents = read_documents(sources, console)
    if not documents:
        raise rejected("no objects passed to apply")
    if rollout is not None:
        documents = with_rollout(documents, rollout_annotation_from_file(rollout))
    plan = planned_input(documents, console)
    access: ClusterAccess | None = None
    resources: dict[int, Resource] = {}
    try:
        if kubernetes_configured(console.env):
            access = ClusterAccess(console.env)
            try:
                resources = await asyncio.to_thread(checked_against_cluster, access, plan)
            except ApiException as error:
                raise CommandError(f"Kubernetes API: {api_message(error)}") from None
        else:
            for item in plan:
                if isinstance(item, KubeDocument):
                    raise rejected(
                        f"{item.origin}: a {item.kind} goes to Kubernetes, but there is no Kubernetes "
                        "configuration (set KUBECONFIG)"
                    )
        return await applied_in_order(plan, resources, access, console)
    finally:
        if access is not None:
            access.close()


async def applied_in_order(
    plan: Sequence[PlannedDocument],
    resources: dict[int, Resource],
    access: ClusterAccess | None,
    console: Console,
) -> int:
    """Applies each planned document; the worst exit status of them all."""
    worst = EXIT_OK
    for index, item in enumerate(plan):
        try:
            if isinstance(item, RayDocument):
                if access is not None and item.ref.kind == KIND_RAYJOB:
                    await asyncio.to_thread(_refuse_kuberay_leftovers, access, item.ref)
                await apply_manifest(item.ref, item.manifest, console)
            elif isinstance(item, CronDocument):
                ref = CronJobRef(item.namespace, item.name)
                console.out(await apply_cronjob(ref, item.manifest, console))
            elif access is not None:  # always, for a Kubernetes document: the input was rejected otherwise
                console.out(await asyncio.to_thread(access.apply, item, resources[index]))
        except CommandError as error:
            console.err(f"error: {error}")
            worst = max(worst, error.exit_code)
        except RPCError as error:
            console.err(f"error: Temporal: {error.message}")
            worst = max(worst, EXIT_FAILURE)
        except ApiException as error:
            console.err(f"error: {item.origin}: {api_message(error)}")
            worst = max(worst, EXIT_FAILURE)
    return worst


def _refuse_kuberay_leftovers(access: ClusterAccess, ref: ObjectRef) -> None:
    """A RayJob whose KubeRay leftovers nobody adopted is not started: that would run it a second time
    (raypilot.adopt.rayjob.apply_refusal says why and points at `raypilot adopt`)."""
    leftovers = rayjob_unadopted_leftovers(access.kube.api_client, ref.namespace, ref.name)
    message = apply_refusal(ref.namespace, ref.name, leftovers)
    if message is not None:
        raise rejected(message)
