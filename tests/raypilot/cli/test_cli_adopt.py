"""`raypilot adopt rayservice|rayjob/NS/NAME -f FILE` without CRDs: KubeRay's leftovers of a RayService (after
`--cascade=orphan`) are taken over and the workflow starts from the cluster that serves, creating none; a
RayJob's that cannot be continued are refused, by `adopt` and by a plain `apply`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from sandbox.testing import wait_until
from tests.integration.rayjob_support import example
from tests.integration.rayservice_helpers import KUBERAY_MADE, rayservice
from tests.raypilot.cli.conftest import CliStack

pytestmark = [pytest.mark.devserver, pytest.mark.slow]


async def _status(cli_stack: CliStack, ref: str) -> dict[str, Any]:
    result = await cli_stack.run("status", ref, "-o", "json")
    loaded: dict[str, Any] = json.loads(result.stdout) if result.code == 0 else {}
    return loaded


async def test_adopt_keeps_the_serving_cluster_and_starts_the_workflow_from_it(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace, name = cli_stack.namespace(), "moved"
    ref = f"rayservice/{namespace}/{name}"
    manifest = tmp_path / "rayservice.yaml"
    manifest.write_text(yaml.safe_dump(rayservice(namespace, name, "v1")))
    assert (await cli_stack.run("apply", "-f", str(manifest))).code == 0

    async def running() -> dict[str, Any] | None:
        status = await _status(cli_stack, ref)
        return status if status.get("serviceStatus") == "Running" else None

    first = await wait_until(running, within=60, interval=0.3, what="Running")
    cluster = first["activeServiceStatus"]["rayClusterName"]
    # KubeRay's leftovers: no workflow, KubeRay's labels, no raypilot annotations.
    await cli_stack.client.get_workflow_handle(f"rayservice/{namespace}/{name}").terminate(
        "KubeRay's operator"
    )
    custom, core = k8s.CustomObjectsApi(cli_stack.api_client), k8s.CoreV1Api(cli_stack.api_client)
    custom.patch_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", cluster, KUBERAY_MADE)
    for service in (f"{name}-head-svc", f"{name}-serve-svc"):
        core.patch_namespaced_service(service, namespace, KUBERAY_MADE)

    adopted = await cli_stack.run("adopt", ref, "-f", str(manifest))
    assert adopted.code == 0, adopted.stderr
    assert f"adopted RayCluster {cluster} (kept as it is)" in adopted.stdout
    again = await wait_until(running, within=60, interval=0.3, what="Running after adoption")
    assert again["activeServiceStatus"]["rayClusterName"] == cluster
    assert cli_stack.owned("rayclusters", namespace, "RayService", name) == [cluster]
    labels = custom.get_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", cluster)[
        "metadata"
    ]
    assert labels["labels"]["app.kubernetes.io/created-by"] == "raypilot"
    assert (await cli_stack.run("delete", ref)).code == 0


async def test_a_rayjob_whose_submission_id_is_unknown_is_refused_by_adopt_and_by_a_plain_apply(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    """KubeRay's leftover RayCluster of a SidecarMode RayJob without spec.jobId: `adopt` says why it cannot
    continue it (exit 2); a plain `apply` would run it a second time, so it refuses and points at `adopt`;
    nothing is started. A manifest of another object is refused too."""
    namespace, name = cli_stack.namespace(), "one"
    kuberay = example("rayjob-sidecarmode", namespace, rename=name)
    kuberay["spec"].pop("jobId", None)
    leftover = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": f"{name}-abcde",
            "labels": {
                "ray.io/originated-from-cr-name": name,
                "ray.io/originated-from-crd": "RayJob",
                "app.kubernetes.io/created-by": "kuberay-operator",
            },
        },
        "spec": kuberay["spec"]["rayClusterSpec"],
    }
    k8s.CustomObjectsApi(cli_stack.api_client).create_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", leftover
    )
    manifest = tmp_path / "rayjob.yaml"
    manifest.write_text(yaml.safe_dump(kuberay))
    ref = f"rayjob/{namespace}/{name}"
    refused = await cli_stack.run("adopt", ref, "-f", str(manifest))
    assert refused.code == 2
    assert refused.stderr.startswith("error: raypilot adopt: in SidecarMode KubeRay's submitter")
    assert "set spec.jobId to that id" in refused.stderr
    applied = await cli_stack.run("apply", "-f", str(manifest))
    assert applied.code == 2
    assert f"KubeRay's RayCluster/{name}-abcde of this RayJob are still there" in applied.stderr
    assert f"raypilot adopt {ref} -f FILE" in applied.stderr
    assert [run async for run in cli_stack.client.list_workflows(f"WorkflowId = '{ref}'")] == []
    mismatch = await cli_stack.run("adopt", "rayservice/default/other", "-f", str(manifest))
    assert mismatch.code == 2
    assert f"is rayjob/{namespace}/{name}" in mismatch.stderr
