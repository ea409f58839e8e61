"""Adopting a RayJob's KubeRay leftovers (pure, table-tested; the I/O is in raypilot.adopt.kube).

After `kubectl delete rayjob.ray.io/NAME --cascade=orphan` KubeRay leaves the RayCluster labelled
`ray.io/originated-from-cr-name=NAME` (none in clusterSelector mode), the RayJob's head Service and, in
K8sJobMode, its submitter Job, all without an owner. The Ray job itself keeps running on that cluster. To
continue it rather than run the entrypoint a second time, the new run needs its submission id: KubeRay kept
it in the deleted RayJob's status, but its K8sJobMode submitter Job carries it too (env
`RAY_JOB_SUBMISSION_ID`, and `--submission-id` in its command), `spec.jobId` fixes it when set, and in
HTTPMode the first attempt looks it up on the cluster's dashboard (KubeRay's rules: a submission id
`<name>-<5 random>` with the RayJob's entrypoint and metadata; none found: nothing was submitted yet).

What is adopted gets raypilot's ownership labels, the `raypilot.io/workflow-id` annotation and, when a
`raypilot.io` object stands for the RayJob, an ownerReference to it; the workflow's manifest gets
`raypilot.io/adopted-rayjob` (models.source.AdoptedRayJob) and its first attempt continues from there. What
cannot be continued honestly is refused, saying why: the Ray job's submission id unknown (SidecarMode
without spec.jobId), several clusters, objects KubeRay still owns, or a RayJob that already
finished under KubeRay and whose cluster is gone.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Final

from models.naming import (
    ANNOTATION_RAYJOB_UID,
    ANNOTATION_WORKFLOW_ID,
    KIND_RAYJOB,
    ownership_label_selector,
    submitter_job_name,
)
from models.rayjob import JobSubmissionMode, RayJob
from models.source import AdoptedRayJob
from raypilot.adopt.plan import ObjectPatch, adopted_metadata

SUBMISSION_ID_ENV: Final = "RAY_JOB_SUBMISSION_ID"


@dataclass(frozen=True)
class RayJobAdoptionPlan:
    """`adopted` None and `refusal` None: nothing of KubeRay's is left (a plain first run)."""

    adopted: AdoptedRayJob | None = None
    refusal: str | None = None
    patches: list[ObjectPatch] = field(default_factory=list)


def rayjob_leftover_selector(name: str) -> str:
    """KubeRay's (and raypilot's) labels of what a RayJob created."""
    return ownership_label_selector(KIND_RAYJOB, name)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def _made_by_a_raypilot_run(obj: dict[str, Any]) -> bool:
    """Objects a raypilot run created name their run (`raypilot.io/rayjob-uid`); KubeRay's never do, nor do
    adopted ones."""
    return bool((_meta(obj).get("annotations") or {}).get(ANNOTATION_RAYJOB_UID))


def _foreign_owner(obj: dict[str, Any], owner_uid: str) -> str | None:
    """`Kind/name` of an owner other than the raypilot.io object (KubeRay's RayJob still exists)."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("uid") != owner_uid or not owner_uid:
            return f"{ref.get('kind')}/{ref.get('name')}"
    return None


def submission_id_of_submitter(submitter: dict[str, Any]) -> str:
    """The Ray job's submission id a K8sJobMode submitter Job carries ("" when it carries none)."""
    template = ((submitter.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = template.get("containers") or []
    for container in containers:
        for env in container.get("env") or []:
            if env.get("name") == SUBMISSION_ID_ENV and env.get("value"):
                return str(env["value"])
    for container in containers:
        parts = (container.get("command") or []) + (container.get("args") or [])
        words = [word for part in parts for word in _split(part)]
        for index, word in enumerate(words[:-1]):
            if word == "--submission-id":
                return words[index + 1]
    return ""


def _split(text: Any) -> list[str]:
    try:
        return shlex.split(str(text))
    except ValueError:
        return str(text).split()


def rayjob_adoption_plan(
    job: RayJob,
    clusters: list[dict[str, Any]],
    submitter: dict[str, Any] | None,
    head_service: dict[str, Any] | None,
    owner: dict[str, Any] | None,
) -> RayJobAdoptionPlan:
    """From what is labelled for the RayJob (`clusters`; in clusterSelector mode none are its own), its
    submitter Job and head Service (None: absent), and the raypilot.io object's ownerReference (None
    without one): what the first run takes over, or why it cannot."""
    owner_uid = str((owner or {}).get("uid") or "")
    namespace, name = job.metadata.namespace, job.metadata.name
    own_cluster = not job.spec.cluster_selector
    found: list[tuple[str, dict[str, Any]]] = [("RayCluster", c) for c in clusters if own_cluster]
    if submitter is not None:
        found.append(("Job", submitter))
    if head_service is not None and own_cluster:
        found.append(("Service", head_service))
    kuberays = [(kind, obj) for kind, obj in found if not _made_by_a_raypilot_run(obj)]
    if not kuberays:
        return RayJobAdoptionPlan()
    for kind, obj in kuberays:
        foreign = _foreign_owner(obj, owner_uid)
        if foreign is not None:
            return RayJobAdoptionPlan(
                refusal=f"{kind} {_meta(obj).get('name')} of rayjob {namespace}/{name} is still owned by "
                f"{foreign}: delete that with --cascade=orphan first (KubeRay still runs it)"
            )
    left = {kind: [obj for k, obj in kuberays if k == kind] for kind in ("RayCluster", "Job", "Service")}
    if len(left["RayCluster"]) > 1:
        names = ", ".join(sorted(str(_meta(c).get("name")) for c in left["RayCluster"]))
        return RayJobAdoptionPlan(
            refusal=f"KubeRay left several RayClusters of rayjob {namespace}/{name} ({names}): "
            "it is not clear which one its Ray job runs on; delete the others"
        )
    cluster = left["RayCluster"][0] if left["RayCluster"] else None
    kept_submitter = left["Job"][0] if left["Job"] else None
    if own_cluster and cluster is None:
        leftovers = sorted(f"{kind} {_meta(obj).get('name')}" for kind, obj in kuberays)
        return RayJobAdoptionPlan(refusal=_finished_refusal(namespace, name, leftovers))
    http_mode = job.spec.submission_mode == JobSubmissionMode.HTTP_MODE
    lookup = http_mode and not job.spec.job_id and cluster is not None
    job_id, refusal = ("", None) if lookup else _submission_id(job, cluster, kept_submitter)
    if refusal is not None:
        return RayJobAdoptionPlan(refusal=refusal)
    started = _meta(cluster if cluster is not None else kept_submitter or {}).get("creationTimestamp")
    adopted = AdoptedRayJob(
        cluster=str(_meta(cluster).get("name")) if cluster is not None else "",
        job_id=job_id,
        submitter=kept_submitter is not None,
        head_service=bool(left["Service"]),
        start_time=str(started or ""),
        lookup=lookup,
    )
    patch = {"metadata": adopted_metadata(KIND_RAYJOB, job.metadata, owner)}
    patches = [ObjectPatch(kind, str(_meta(obj).get("name")), patch) for kind, obj in kuberays]
    return RayJobAdoptionPlan(adopted=adopted, patches=patches)


def _submission_id(
    job: RayJob, cluster: dict[str, Any] | None, submitter: dict[str, Any] | None
) -> tuple[str, str | None]:
    """The Ray job's submission id, or why it is unknown. "" with no refusal: nothing was submitted yet (a
    K8sJobMode submitter is created only once the cluster is ready), so the run may choose one."""
    mode = job.spec.submission_mode
    if submitter is not None:
        found = submission_id_of_submitter(submitter) or job.spec.job_id
        if found:
            return found, None
        return "", (
            f"the submitter Job {submitter_job_name(job.metadata.name)} of rayjob "
            f"{job.metadata.namespace}/{job.metadata.name} carries no submission id ({SUBMISSION_ID_ENV}): "
            "raypilot cannot tell which Ray job to continue"
        )
    if job.spec.job_id or mode in (JobSubmissionMode.K8S_JOB_MODE, JobSubmissionMode.INTERACTIVE_MODE):
        return job.spec.job_id, None
    return "", (
        f"in {mode.value} KubeRay's submitter in the head Pod submitted the Ray job of rayjob "
        f"{job.metadata.namespace}/{job.metadata.name} with a submission id KubeRay kept only in the deleted "
        "RayJob's status: set spec.jobId to that id (ray job list on RayCluster "
        f"{_meta(cluster or {}).get('name')}) and apply again, or delete what KubeRay left (kubectl delete "
        f"rayclusters.ray.io,services,jobs.batch -n {job.metadata.namespace} -l "
        f"{rayjob_leftover_selector(job.metadata.name)}) to run it anew"
    )


def _finished_refusal(namespace: str, name: str, leftovers: list[str]) -> str:
    return (
        f"rayjob {namespace}/{name} ran under KubeRay and its RayCluster is gone ({', '.join(leftovers)} "
        "left): there is no Ray job to continue, and raypilot does not run it a second time by itself. "
        f"Delete what is left (kubectl delete jobs.batch,services -n {namespace} -l "
        f"{rayjob_leftover_selector(name)}) to run it anew"
    )


def unadopted_leftovers(objects: list[dict[str, Any]]) -> list[str]:
    """`Kind/name` of what KubeRay made for a RayJob and nobody adopted yet (no `raypilot.io/workflow-id`):
    a plain `raypilot apply` would run the RayJob a second time beside it."""
    names = []
    for obj in objects:
        meta = _meta(obj)
        if not (meta.get("annotations") or {}).get(ANNOTATION_WORKFLOW_ID):
            names.append(f"{obj.get('kind') or 'object'}/{meta.get('name')}")
    return sorted(names)


def apply_refusal(namespace: str, name: str, leftovers: list[str]) -> str | None:
    """Why `raypilot apply` of a RayJob does not start it while KubeRay's leftovers exist (None: nothing in
    the way). It refuses rather than adopts: adopting takes objects over, which only `raypilot adopt` (or
    the controller, for a raypilot.io object) is asked to do."""
    if not leftovers:
        return None
    return (
        f"rayjob/{namespace}/{name}: KubeRay's {', '.join(leftovers)} of this RayJob are still there; "
        "starting it would run its entrypoint a second time. Take them over with `raypilot adopt "
        f"rayjob/{namespace}/{name} -f FILE` (it continues the Ray job), or delete them first"
    )
