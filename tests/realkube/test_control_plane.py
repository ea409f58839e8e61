"""deploy/ and KubeRay against the real Kubernetes control plane (sandbox/realkube: etcd, kube-apiserver with
RBAC, kube-controller-manager, KubeRay's operator v1.5.0, built by `make kube`).

- raypilot's CRDs (deploy/crds) are accepted and established, and every RayJob and RayService of the corpus
  and the examples, as a raypilot.io/v1 object, is stored with its spec unchanged (no field pruned by the
  structural schema, nothing defaulted);
- deploy/'s ClusterRole, bound to its ServiceAccount, is what the API server enforces for that account's
  token: each permission it lists is granted, and a neighbouring one is not;
- KubeRay's operator creates a RayCluster's head Pod and Service, and the garbage collector deletes them with
  the RayCluster (owner references).
"""

from __future__ import annotations

import copy
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sandbox.realkube.controlplane import ControlPlane, ControlPlaneError, control_plane
from tests.realkube.waiting import eventually

pytestmark = [pytest.mark.realkube, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
MANIFESTS = sorted([*(REPO / "tests" / "corpus").glob("*.yaml"), *(REPO / "examples").glob("*.yaml")])
WORKER = "system:serviceaccount:default:raypilot-worker"


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with control_plane(tmp_path_factory.mktemp("realkube")) as started:
        yield started


def ray_objects(kind: str) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("apiVersion") == "ray.io/v1" and document.get("kind") == kind:
                found.append((path.name, document))
    return found


@pytest.mark.parametrize("kind", ["RayJob", "RayService"])
def test_raypilot_crds_store_every_corpus_and_example_spec_unchanged(plane: ControlPlane, kind: str) -> None:
    plane.kubectl("apply", "--server-side", "-k", str(DEPLOY / "crds"))
    plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{kind.lower()}s.raypilot.io")
    namespace = f"corpus-{kind.lower()}"
    plane.kubectl("create", "namespace", namespace)
    objects = ray_objects(kind)
    assert len(objects) >= 5, objects
    changed = {}
    for source, manifest in objects:
        body = copy.deepcopy(manifest)
        body["apiVersion"] = "raypilot.io/v1"
        body["metadata"].pop("namespace", None)
        body.pop("status", None)
        stored = json.loads(
            plane.kubectl("create", "-n", namespace, "-o", "json", "-f", "-", input_text=json.dumps(body))
        )
        if stored["spec"] != body["spec"]:
            changed[source] = (body["spec"], stored["spec"])
    assert not changed, changed


def worker_token(plane: ControlPlane) -> str:
    for name in ("serviceaccount.yaml", "clusterrole.yaml", "clusterrolebinding.yaml"):
        plane.kubectl("apply", "--server-side", "-n", "default", "-f", str(DEPLOY / "base" / name))
    return plane.kubectl("create", "token", "raypilot-worker", "-n", "default").strip()


def as_worker(plane: ControlPlane, token: str, *argv: str) -> str:
    """What the API server answers the worker's ServiceAccount token: "yes", "no" (`auth can-i`)."""
    config = [
        "--kubeconfig=/dev/null",
        f"--server={plane.server}",
        f"--certificate-authority={plane.certs.ca_cert}",
    ]
    done = subprocess.run(
        [plane.binary("kubectl"), *config, f"--token={token}", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip()


def test_the_worker_token_gets_exactly_the_clusterrole_of_deploy(plane: ControlPlane) -> None:
    token = worker_token(plane)
    role = yaml.safe_load((DEPLOY / "base" / "clusterrole.yaml").read_text())
    denied = []
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                target = f"{resource}.{group}" if group else resource
                for verb in rule["verbs"]:
                    if as_worker(plane, token, "auth", "can-i", verb, target, "-n", "tenant") != "yes":
                        denied.append((verb, target))
    assert not denied, denied
    # Neighbours of what it may do: a secret is read by name only; no RayJob is written; nodes are not its.
    for verb, target in (
        ("list", "secrets"),
        ("update", "rayjobs.ray.io"),
        ("get", "nodes"),
        ("create", "pods"),
    ):
        assert as_worker(plane, token, "auth", "can-i", verb, target, "-n", "tenant") == "no", (verb, target)
    # And a real request with that token: allowed, then forbidden.
    assert "No resources found" in as_worker(plane, token, "get", "rayclusters.ray.io", "-n", "tenant")
    assert "Forbidden" in as_worker(plane, token, "get", "secrets", "-n", "tenant")


def test_kuberay_creates_the_head_and_the_garbage_collector_removes_it(plane: ControlPlane) -> None:
    cluster = yaml.safe_load((REPO / "examples" / "raycluster.yaml").read_text())
    cluster["metadata"] = {"name": "contract", "namespace": "default"}
    plane.kubectl("apply", "--server-side", "-f", "-", input_text=json.dumps(cluster))

    def head() -> dict[str, Any] | None:
        pods = json.loads(
            plane.kubectl(
                "get",
                "pods",
                "-n",
                "default",
                "-l",
                "ray.io/cluster=contract,ray.io/node-type=head",
                "-o",
                "json",
            )
        )["items"]
        return pods[0] if pods else None

    try:
        pod = eventually(head, "KubeRay's head Pod")
    except AssertionError as error:
        raise AssertionError(f"{error}\n{plane.log_tail('kuberay-operator', 30)}") from None
    assert [owner["kind"] for owner in pod["metadata"]["ownerReferences"]] == ["RayCluster"]
    assert pod["status"]["phase"] == "Pending"  # no node runs it yet
    service = eventually(
        lambda: plane.kubectl(
            "get", "service", "contract-head-svc", "-n", "default", "-o", "name", check=False
        ),
        "KubeRay's head Service",
    )
    assert service.strip() == "service/contract-head-svc"
    plane.kubectl("delete", "raycluster", "contract", "-n", "default", "--wait=false")
    try:
        eventually(lambda: head() is None, "head Pod deleted with its RayCluster")
    except (AssertionError, ControlPlaneError) as error:
        raise AssertionError(f"{error}\n{plane.log_tail('kube-controller-manager', 30)}") from None
