"""Kubernetes activities for the K8sJobMode submitter Job and for a RayCluster's Pods."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from activities.kubernetes.client import kubernetes_errors
from activities.kubernetes.clusters import KubernetesActivityBase
from activities.kubernetes.resources import JOB, POD, trim_job, trim_pod
from models.naming import LABEL_CLUSTER, LABEL_NODE_TYPE
from wire import stubs
from wire.kubernetes import ClusterPods, CreateObject, DeleteObject, HeadPodKey, ObjectKey, PodLabels
from wire.stubs.common import implements


def head_pod_selector(cluster_name: str) -> str:
    return f"{LABEL_CLUSTER}={cluster_name},{LABEL_NODE_TYPE}=head"


def pick_head_pod(pods: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The head Pod of a cluster: while an old head is terminating and a new one starts, the one not being
    deleted; among equals the newest."""

    def rank(pod: dict[str, Any]) -> tuple[bool, str, str]:
        metadata = pod.get("metadata") or {}
        return (
            not metadata.get("deletionTimestamp"),
            str(metadata.get("creationTimestamp") or ""),
            str(metadata.get("name") or ""),
        )

    return max(pods, key=rank, default=None)


class WorkloadActivities(KubernetesActivityBase):
    @implements(stubs.create_job)
    def create_job(self, request: CreateObject) -> dict[str, Any]:
        """Create the submitter batch/v1 Job (or return the existing one): metadata, status, spec without the
        pod template."""
        return trim_job(self._create(JOB, request))

    @implements(stubs.get_job)
    def get_job(self, key: ObjectKey) -> dict[str, Any] | None:
        return self._get_trimmed(JOB, key, trim_job)

    @implements(stubs.delete_job)
    def delete_job(self, request: DeleteObject) -> bool:
        """Delete the Job; Background propagation (the default) removes its pods too."""
        return self._delete(JOB, request)

    @implements(stubs.get_head_pod)
    def get_head_pod(self, key: HeadPodKey) -> dict[str, Any] | None:
        """The RayCluster's head Pod (trimmed: labels, IP, phase, conditions, container statuses), or None."""
        with kubernetes_errors(f"list head pods of RayCluster {key.cluster_name!r} in {key.namespace!r}"):
            pods = self.kube.list(POD, key.namespace, head_pod_selector(key.cluster_name))
        head = pick_head_pod(pods)
        return trim_pod(head) if head is not None else None

    @implements(stubs.patch_pod_labels)
    def patch_pod_labels(self, request: PodLabels) -> dict[str, Any] | None:
        """Set (or, with None, remove) labels of a Pod, e.g. ray.io/serve on a head whose Serve proxy turned
        (un)healthy. None when the Pod is gone."""
        patch = {"metadata": {"labels": dict(request.labels)}}
        with kubernetes_errors(f"label {POD.describe(request.namespace, request.name)}"):
            patched = self.kube.merge_patch(POD, request.namespace, request.name, patch)
        return trim_pod(patched) if patched is not None else None

    @implements(stubs.list_cluster_pods)
    def list_cluster_pods(self, key: ClusterPods) -> list[dict[str, Any]]:
        """Every Pod of the RayCluster (trimmed: labels, phase, conditions, container statuses)."""
        with kubernetes_errors(f"list pods of RayCluster {key.cluster_name!r} in {key.namespace!r}"):
            pods = self.kube.list(POD, key.namespace, f"{LABEL_CLUSTER}={key.cluster_name}")
        return [trim_pod(pod) for pod in pods]

    @implements(stubs.delete_pod)
    def delete_pod(self, request: DeleteObject) -> bool:
        """Delete one Pod (guarded by its uid), so that the RayCluster controller creates it again from the
        current template; False when it is already gone."""
        return self._delete(POD, request)
