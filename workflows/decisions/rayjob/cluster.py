"""The RayCluster a RayJob creates, and the dashboard address read from that cluster's head Service.

KubeRay functions: `constructRayClusterForRayJob` (rayjob_controller.go), `utils.GenerateHeadServiceName` and
`utils.FetchHeadServiceURL` (utils/util.go).

Where raypilot differs: the cluster also carries `app.kubernetes.io/created-by=raypilot` and the workflow-id
annotation (contract section 5); the owner reference is left to the activity, which knows the RayJob's uid.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from models.base import dump_manifest
from models.features import FeatureGates
from models.naming import (
    ANNOTATION_DISABLE_PROVISIONED_HEAD_RESTART,
    KIND_RAYCLUSTER,
    KIND_RAYJOB,
    LABEL_JOB_SUBMISSION_MODE,
    head_service_name,
    ownership_labels,
    workflow_annotations,
)
from models.raycluster import RAY_API_VERSION, RayClusterSpec
from models.rayjob import JobSubmissionMode, RayJob
from workflows.decisions.rayjob.submitter import submitter_container_for_sidecar

__all__ = [
    "DashboardPortNotFound",
    "cluster_head_service_name",
    "dashboard_url_from_head_service",
    "rayjob_cluster_manifest",
]

_DASHBOARD_PORT_NAME = "dashboard"


def rayjob_cluster_manifest(
    job: RayJob,
    cluster_name: str,
    *,
    workflow_id: str,
    gates: FeatureGates,
    enable_login_shell: bool = False,
) -> dict[str, Any]:
    """The RayCluster manifest for this attempt: spec.rayClusterSpec as written, the RayJob's labels and
    annotations plus ray.io/originated-from-*, ray.io/job-submission-mode and raypilot's ownership marks.

    SidecarMode: the submitter container is appended to the head Pod, whose restartPolicy becomes Never, and
    the cluster is annotated so that a provisioned head is never recreated (the job would run twice).
    """
    cluster_spec = job.spec.ray_cluster_spec
    if cluster_spec is None:
        raise ValueError(
            "a RayCluster is only created from spec.rayClusterSpec (clusterSelector mode uses one)"
        )
    mode = job.spec.submission_mode
    labels = {
        **job.metadata.labels,
        **ownership_labels(KIND_RAYJOB, job.metadata.name),
        LABEL_JOB_SUBMISSION_MODE: mode.value,
    }
    annotations = dict(job.metadata.annotations)
    if mode == JobSubmissionMode.SIDECAR_MODE:
        annotations[ANNOTATION_DISABLE_PROVISIONED_HEAD_RESTART] = "true"
    annotations.update(workflow_annotations(workflow_id))
    spec = copy.deepcopy(dump_manifest(cluster_spec))
    if mode == JobSubmissionMode.SIDECAR_MODE:
        sidecar = submitter_container_for_sidecar(
            job, cluster_name, gates, enable_login_shell=enable_login_shell
        )
        pod_spec = spec["headGroupSpec"]["template"].setdefault("spec", {})
        pod_spec.setdefault("containers", []).append(sidecar)
        pod_spec["restartPolicy"] = "Never"
    return {
        "apiVersion": RAY_API_VERSION,
        "kind": KIND_RAYCLUSTER,
        "metadata": {
            "name": cluster_name,
            "namespace": job.metadata.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


def cluster_head_service_name(cluster_name: str, cluster_spec: RayClusterSpec) -> str:
    """The RayCluster's head Service: headGroupSpec.headService.metadata.name, else "<cluster>-head-svc"."""
    custom = ((cluster_spec.head_group_spec.head_service or {}).get("metadata") or {}).get("name")
    return custom if isinstance(custom, str) and custom else head_service_name(cluster_name)


class DashboardPortNotFound(ValueError):
    """The head Service has no port named "dashboard" (KubeRay: "dashboard port is not found")."""


def dashboard_url_from_head_service(service: Mapping[str, Any], cluster_domain: str) -> str:
    """status.dashboardURL from the head Service's JSON: "<svc>.<ns>.svc.<domain>:<port>" (no scheme)."""
    metadata = service.get("metadata") or {}
    ports = (service.get("spec") or {}).get("ports") or []
    port = next((p.get("port") for p in ports if p.get("name") == _DASHBOARD_PORT_NAME), None)
    if port is None:
        raise DashboardPortNotFound(f"{_DASHBOARD_PORT_NAME} port is not found")
    return f"{metadata.get('name', '')}.{metadata.get('namespace', '')}.svc.{cluster_domain}:{port}"
