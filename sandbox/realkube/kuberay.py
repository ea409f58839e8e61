"""KubeRay's operator as a cluster runs it: a pod on the node (its Helm chart's Deployment has one replica),
as its own ServiceAccount with the ClusterRole of its module, configured in-cluster (the projected token, the
`kubernetes` Service). In a pod it resolves the cluster's Service names as KubeRay expects, so it reaches each
RayCluster's dashboard at `<head Service>.<namespace>.svc.cluster.local:8265` and reconciles RayJobs and
RayServices itself, as well as RayClusters. The container runs the binary `make kube` built (the node agent
runs containers as local processes; the image is what a cluster would pull).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import yaml

from sandbox.realkube.conditions import is_ready
from sandbox.realkube.controlplane import (
    KUBERAY_ACCOUNT,
    READY_WITHIN_S,
    ControlPlane,
    ControlPlaneError,
    grant_kuberay,
)

__all__ = [
    "DELETION_RULES_GATE",
    "KUBERAY_IMAGE",
    "KUBERAY_POD",
    "kuberay_operator",
    "kuberay_pod",
    "restart_kuberay",
]

KUBERAY_POD = "kuberay-operator"
# KubeRay v1.5.0 keeps RayJob deletionRules behind an alpha gate, off by default (raypilot follows KubeRay's
# later default, on). The stacks that measure the two side by side turn it on, so both run the same manifests.
DELETION_RULES_GATE = "RayJobDeletionPolicy=true"
KUBERAY_IMAGE = "quay.io/kuberay/operator:v1.5.0"
HEALTH_PORT = 8082


def kuberay_pod(binary: str, feature_gates: str) -> dict[str, Any]:
    """The operator's pod: the flags of its Helm chart (one replica, so no leader election), its health
    probes, and restarts as a Deployment's pod gets them."""
    argv = [
        binary,
        "--enable-leader-election=false",
        "--metrics-addr=:8080",
        f"--health-probe-bind-address=:{HEALTH_PORT}",
        "--log-stdout-encoder=console",
    ]
    if feature_gates:
        argv.append(f"--feature-gates={feature_gates}")
    probe = {"httpGet": {"path": "/readyz", "port": HEALTH_PORT}, "periodSeconds": 1}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": KUBERAY_POD,
            "namespace": "default",
            "labels": {"app.kubernetes.io/name": "kuberay-operator"},
        },
        "spec": {
            "serviceAccountName": KUBERAY_ACCOUNT,
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "kuberay-operator",
                    "image": KUBERAY_IMAGE,
                    "command": argv,
                    "readinessProbe": probe,
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": HEALTH_PORT},
                        "periodSeconds": 5,
                    },
                }
            ],
        },
    }


def _ready(plane: ControlPlane) -> bool:
    found = plane.get_json(f"/api/v1/namespaces/default/pods/{KUBERAY_POD}")
    return found is not None and is_ready(found)


def _wait_ready(plane: ControlPlane) -> None:
    deadline = time.monotonic() + READY_WITHIN_S
    while not _ready(plane):
        if time.monotonic() > deadline:
            logs = plane.kubectl("logs", KUBERAY_POD, "-n", "default", "--tail=15", check=False)
            raise ControlPlaneError(f"KubeRay's operator pod did not get Ready:\n{logs}")
        time.sleep(0.3)


def restart_kuberay(plane: ControlPlane, gap_s: float) -> None:
    """What rolling out the operator's Deployment again does: the pod goes (SIGTERM, its grace period), and a
    new one with the same command (flags, feature gates) starts `gap_s` later; returns once it is Ready."""
    running = json.loads(plane.kubectl("get", "pod", KUBERAY_POD, "-n", "default", "-o", "json"))
    plane.kubectl("delete", "pod", KUBERAY_POD, "-n", "default", "--wait=true")
    time.sleep(gap_s)
    pod = kuberay_pod(plane.binary("kuberay-operator"), "")
    pod["spec"]["containers"][0]["command"] = running["spec"]["containers"][0]["command"]
    plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(pod))
    _wait_ready(plane)


@contextlib.contextmanager
def kuberay_operator(plane: ControlPlane, feature_gates: str = "") -> Iterator[None]:
    """KubeRay's operator pod, Ready, for the block (the node agent stops it with the node)."""
    grant_kuberay(plane)
    pod = kuberay_pod(plane.binary("kuberay-operator"), feature_gates)
    plane.kubectl("apply", "-f", "-", input_text=yaml.safe_dump(pod))
    _wait_ready(plane)
    yield
