"""A retry on the same RayCluster (retry-policy `sameCluster: true`) by submission mode: only HTTPMode, where
raypilot submits the entrypoint itself, can submit it again; every other case is refused at apply with a
message saying why (InteractiveMode: the user submits the job and names it in spec.jobId, once)."""

from __future__ import annotations

import pytest

from tests.workflows.decisions.rayjob.test_retry_policy import job_with
from workflows.decisions.rayjob.annotations import raypilot_annotation_problem
from workflows.decisions.rayjob.retry_policy import RETRY_POLICY_ANNOTATION, same_cluster_refusal

SAME_CLUSTER = {"classes": {"SupervisorStart": {"sameCluster": True}}}


@pytest.mark.parametrize(
    ("mode", "selector", "because"),
    [
        ("HTTPMode", False, None),
        ("InteractiveMode", False, "raypilot has no job of its own to submit again"),
        ("K8sJobMode", False, "submitter Kubernetes Job runs once per RayCluster"),
        ("SidecarMode", False, "submitter container runs once, in the head Pod"),
        ("HTTPMode", True, "with clusterSelector the RayCluster is shared"),
        ("InteractiveMode", True, "with clusterSelector the RayCluster is shared"),
    ],
)
def test_same_cluster_retries_by_mode(mode: str, selector: bool, because: str | None) -> None:
    spec = {"clusterSelector": {"ray.io/cluster": "shared"}} if selector else {}
    job = job_with(SAME_CLUSTER, mode, **spec)
    refusal = same_cluster_refusal(job)
    problem = raypilot_annotation_problem(job)
    if because is None:
        assert (refusal, problem) == (None, None)
        return
    assert refusal is not None
    assert because in refusal
    assert problem == f"metadata.annotations[{RETRY_POLICY_ANNOTATION}]: sameCluster: {refusal}"


@pytest.mark.parametrize("mode", ["InteractiveMode", "K8sJobMode", "SidecarMode"])
def test_a_policy_without_same_cluster_is_fine_in_every_mode(mode: str) -> None:
    job = job_with({"classes": {"SupervisorStart": {"sameCluster": False}}, "default": {"retry": True}}, mode)
    assert raypilot_annotation_problem(job) is None
