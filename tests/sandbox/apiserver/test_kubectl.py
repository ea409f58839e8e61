"""Conformance through kubectl: discovery, apply (client and server side), get, patch, selectors, watch."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

RAYCLUSTER = """
apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: demo
  labels: {app: demo}
spec:
  rayVersion: "2.60.0"
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.60.0
"""

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {tier: web}
spec:
  containers:
  - name: main
    image: busybox
    env: [{name: MODE, value: "%s"}]
  - name: sidecar
    image: busybox
"""


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True) -> str:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, *args], input=stdin, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
    return done.stdout + done.stderr


def get_json(env: dict[str, str], *args: str) -> Any:
    return json.loads(kubectl(env, "get", *args, "-o", "json"))


def test_api_resources_lists_the_served_kinds(kubectl_env: dict[str, str]) -> None:
    out = kubectl(kubectl_env, "api-resources")
    for name in ("rayclusters", "rayjobs", "rayservices", "gateways", "httproutes", "endpointslices", "jobs"):
        assert name in out
    assert "gtw" in out


def test_apply_get_patch_delete_a_raycluster(kubectl_env: dict[str, str], namespace: str) -> None:
    env = {**kubectl_env}
    assert "created" in kubectl(env, "apply", "-n", namespace, "-f", "-", stdin=RAYCLUSTER)
    assert "unchanged" in kubectl(env, "apply", "-n", namespace, "-f", "-", stdin=RAYCLUSTER)
    table = kubectl(env, "get", "rayclusters", "-n", namespace)
    assert table.split("\n")[0].split() == [
        "NAME",
        "DESIRED",
        "WORKERS",
        "AVAILABLE",
        "WORKERS",
        "CPUS",
        "MEMORY",
        "GPUS",
        "STATUS",
        "AGE",
    ]
    assert table.split("\n")[1].startswith("demo ")
    kubectl(
        env,
        "patch",
        "raycluster",
        "demo",
        "-n",
        namespace,
        "--type",
        "merge",
        "-p",
        '{"spec": {"rayVersion": "2.61.0"}}',
    )
    cluster = get_json(env, "raycluster", "demo", "-n", namespace)
    assert cluster["spec"]["rayVersion"] == "2.61.0"
    assert cluster["metadata"]["generation"] == 2
    assert "serverside-applied" in kubectl(
        env, "apply", "--server-side", "-n", namespace, "-f", "-", stdin=RAYCLUSTER
    )
    assert get_json(env, "raycluster", "demo", "-n", namespace)["spec"]["rayVersion"] == "2.60.0"
    assert "AlreadyExists" in kubectl(
        env, "create", "-n", namespace, "-f", "-", stdin=RAYCLUSTER, check=False
    )
    kubectl(env, "delete", "raycluster", "demo", "-n", namespace)
    assert "NotFound" in kubectl(env, "get", "raycluster", "demo", "-n", namespace, check=False)


def test_apply_uses_strategic_merge_for_pods(kubectl_env: dict[str, str], namespace: str) -> None:
    kubectl(kubectl_env, "apply", "-n", namespace, "-f", "-", stdin=POD % "a")
    assert "configured" in kubectl(kubectl_env, "apply", "-n", namespace, "-f", "-", stdin=POD % "b")
    pod = get_json(kubectl_env, "pod", "web", "-n", namespace)
    columns = kubectl(kubectl_env, "get", "pods", "-n", namespace).split("\n")
    assert columns[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert columns[1].split()[:3] == ["web", "0/2", "Pending"]
    assert [c["name"] for c in pod["spec"]["containers"]] == ["main", "sidecar"]
    assert pod["spec"]["containers"][0]["env"] == [{"name": "MODE", "value": "b"}]


def test_label_selectors_and_label_edits(kubectl_env: dict[str, str], namespace: str) -> None:
    kubectl(kubectl_env, "apply", "-n", namespace, "-f", "-", stdin=POD % "a")
    assert "web" in kubectl(kubectl_env, "get", "pods", "-n", namespace, "-l", "tier in (web,db)")
    kubectl(kubectl_env, "label", "pod", "web", "-n", namespace, "tier-")
    assert "No resources found" in kubectl(kubectl_env, "get", "pods", "-n", namespace, "-l", "tier")
    assert "web" in kubectl(kubectl_env, "get", "pods", "-n", namespace, "-l", "!tier")


def test_generators_that_post_protobuf(kubectl_env: dict[str, str], namespace: str) -> None:
    """kubectl create configmap/secret/namespace send protobuf bodies, not JSON."""
    kubectl(kubectl_env, "create", "configmap", "cm", "-n", namespace, "--from-literal=a=b")
    kubectl(kubectl_env, "create", "secret", "generic", "s", "-n", namespace, "--from-literal=u=p")
    kubectl(kubectl_env, "create", "namespace", f"{namespace}-extra")
    assert get_json(kubectl_env, "configmap", "cm", "-n", namespace)["data"] == {"a": "b"}
    secret = get_json(kubectl_env, "secret", "s", "-n", namespace)
    assert (secret["type"], secret["data"]) == ("Opaque", {"u": "cA=="})
    kubectl(kubectl_env, "delete", "namespace", f"{namespace}-extra")


def test_get_watch_prints_changes(kubectl_env: dict[str, str], namespace: str) -> None:
    assert KUBECTL is not None
    watcher = subprocess.Popen(
        [KUBECTL, "get", "configmaps", "-n", namespace, "-w", "--output-watch-events"],
        env=kubectl_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        kubectl(kubectl_env, "create", "configmap", "watched", "-n", namespace)
        assert watcher.stdout is not None
        line = ""
        while "watched" not in line and time.monotonic() < deadline:
            line = watcher.stdout.readline()
        assert "ADDED" in line
    finally:
        watcher.kill()
        watcher.wait(timeout=10)
