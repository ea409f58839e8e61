"""Which clusters stand in the way of a raypilot.io RayJob moved over from KubeRay (raypilot.adopt.rayjob)."""

from __future__ import annotations

from typing import Any

import pytest

from raypilot.adopt.rayjob import kuberay_leftover_clusters, rayjob_adoption_refusal

UID = "u-1"


def _cluster(name: str, created_by: str | None, owner_uid: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {}}
    if created_by is not None:
        meta["labels"]["app.kubernetes.io/created-by"] = created_by
    if owner_uid is not None:
        meta["ownerReferences"] = [{"kind": "RayJob", "uid": owner_uid}]
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("created_by", "owner_uid", "leftover"),
    [
        ("kuberay-operator", None, True),  # --cascade=orphan of a ray.io RayJob
        (None, None, True),  # made by something else with KubeRay's labels: not raypilot's to take
        ("kuberay-operator", "ray-io-uid", True),  # the ray.io RayJob still lives: KubeRay still runs it
        ("raypilot", UID, False),  # this object's own cluster
        ("raypilot", None, False),  # raypilot made it (`raypilot apply` without CRDs): its workflow's
        ("kuberay-operator", UID, False),  # already the object's
    ],
)
def test_a_cluster_is_a_leftover_when_neither_raypilot_made_it_nor_the_object_owns_it(
    created_by: str | None, owner_uid: str | None, leftover: bool
) -> None:
    clusters = [_cluster("job-abcde", created_by, owner_uid)]
    assert kuberay_leftover_clusters(clusters, UID) == (["job-abcde"] if leftover else [])


def test_the_refusal_names_the_clusters_and_how_to_remove_them_and_nothing_is_refused_without_any() -> None:
    assert rayjob_adoption_refusal("ns", "job", []) is None
    message = rayjob_adoption_refusal("ns", "job", ["job-abcde", "job-fghij"])
    assert message is not None
    assert "RayCluster job-abcde, job-fghij of rayjob ns/job" in message
    assert (
        "kubectl delete rayclusters.ray.io,jobs.batch -n ns "
        "-l ray.io/originated-from-cr-name=job,ray.io/originated-from-crd=RayJob"
    ) in message
