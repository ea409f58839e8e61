"""What adopting KubeRay's leftovers of a RayService changes (raypilot.adopt.plan)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from models.hashing import cluster_spec_hash
from models.manifest import parse_rayservice
from models.raycluster import RayClusterSpec
from models.rayservice import RayService
from raypilot.adopt.plan import adoption_plan

ROOT = Path(__file__).resolve().parents[3]
OWNER = {"apiVersion": "raypilot.io/v1", "kind": "RayService", "name": "rayservice-newcluster", "uid": "u-1"}


def _rayservice() -> RayService:
    return parse_rayservice(yaml.safe_load((ROOT / "examples" / "rayservice-newcluster.yaml").read_text()))


def _cluster(name: str, spec: dict[str, Any], owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/created-by": "kuberay-operator"}}
    if owners:
        meta["ownerReferences"] = owners
    return {"metadata": meta, "spec": copy.deepcopy(spec)}


def _serve_service(cluster: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "rayservice-newcluster-serve-svc"},
        "spec": {"selector": {"ray.io/cluster": cluster}},
    }


def _spec(rayservice: RayService) -> dict[str, Any]:
    return rayservice.spec.ray_cluster_config.model_dump(mode="json", by_alias=True, exclude_unset=True)


def test_the_serving_cluster_with_the_same_spec_is_kept_with_raypilots_hash() -> None:
    rs = _rayservice()
    old, new = _cluster("a-old", _spec(rs)), _cluster("a-new", _spec(rs))
    services = {"rayservice-newcluster-serve-svc": _serve_service("a-new")}
    plan = adoption_plan(rs, [old, new], services, [("HTTPRoute", "rayservice-newcluster-httproute")], OWNER)
    assert (plan.cluster, plan.spec_matches) == ("a-new", True)
    [cluster_patch, service_patch, route_patch] = plan.patches
    meta = cluster_patch.patch["metadata"]
    assert meta["labels"]["app.kubernetes.io/created-by"] == "raypilot"
    expected_hash = cluster_spec_hash(rs.spec.ray_cluster_config)
    assert meta["annotations"]["ray.io/hash-without-replicas-and-workers-to-delete"] == expected_hash
    assert meta["annotations"]["raypilot.io/workflow-id"] == "rayservice/default/rayservice-newcluster"
    assert meta["ownerReferences"][0]["uid"] == "u-1"
    assert (service_patch.kind, route_patch.kind) == ("Service", "HTTPRoute")


def test_a_cluster_stored_with_the_crds_default_port_protocol_is_the_manifests_spec() -> None:
    """A real API server stores `protocol: TCP` on every port KubeRay's CRD schema defaults; the manifest
    leaves it out. Adoption keeps such a cluster as it is, with raypilot's hash of the manifest's spec."""
    rs = _rayservice()
    stored = _spec(rs)
    ports = stored["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports
    assert all("protocol" not in port for port in ports)
    for port in ports:
        port["protocol"] = "TCP"
    plan = adoption_plan(rs, [_cluster("a-old", stored)], {}, [], None)
    assert (plan.cluster, plan.spec_matches) == ("a-old", True)
    annotations = plan.patches[0].patch["metadata"]["annotations"]
    expected_hash = cluster_spec_hash(rs.spec.ray_cluster_config)
    assert annotations["ray.io/hash-without-replicas-and-workers-to-delete"] == expected_hash
    ports[0]["protocol"] = "UDP"  # another protocol is another spec
    assert not adoption_plan(rs, [_cluster("a-old", stored)], {}, [], None).spec_matches


def test_a_cluster_whose_spec_differs_keeps_its_own_hash_so_the_workflow_upgrades_it() -> None:
    rs = _rayservice()
    spec = _spec(rs)
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "7"}
    plan = adoption_plan(rs, [_cluster("a-old", spec)], {}, [], None)
    assert (plan.cluster, plan.spec_matches) == ("a-old", False)
    annotations = plan.patches[0].patch["metadata"]["annotations"]
    own_hash = cluster_spec_hash(RayClusterSpec.model_validate(spec))
    assert annotations["ray.io/hash-without-replicas-and-workers-to-delete"] == own_hash
    assert (
        "ownerReferences" not in plan.patches[0].patch["metadata"]
    )  # no raypilot.io object: `raypilot adopt`


def test_nothing_owned_by_another_live_object_is_taken_and_an_ambiguous_choice_is_not_made() -> None:
    rs = _rayservice()
    owned = _cluster("a-old", _spec(rs), owners=[{"uid": "someone-else"}])
    assert adoption_plan(rs, [owned], {}, [], OWNER).cluster == ""
    two = [_cluster("a-1", _spec(rs)), _cluster("a-2", _spec(rs))]
    assert adoption_plan(rs, two, {}, [], OWNER).cluster == ""  # no serve Service says which one serves
    already = _cluster("a-old", _spec(rs), owners=[{"uid": "u-1"}])
    assert adoption_plan(rs, [already], {}, [], OWNER).cluster == "a-old"  # adopting twice is the same
