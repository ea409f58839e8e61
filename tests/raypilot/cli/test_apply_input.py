"""`raypilot apply -f` with what users apply: several documents per file, directories and repeated -f,
generateName, other objects beside the Ray ones, and input that must be rejected whole before anything is
applied (a bad document, a kind the cluster does not serve, a namespace that does not exist)."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from temporalio.service import RPCError, RPCStatusCode

from sandbox.realkube.controlplane import token_kubeconfig
from tests.raypilot.cli.conftest import CliStack

pytestmark = [pytest.mark.devserver, pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = json.loads((Path(__file__).parents[3] / "examples" / "rayjob.json").read_text())


def rayjob(namespace: str, **metadata: Any) -> dict[str, Any]:
    manifest = copy.deepcopy(EXAMPLE)
    manifest["metadata"] = {"namespace": namespace, **metadata}
    manifest["spec"]["entrypoint"] = "sleep 1"
    return manifest


def configmap(namespace: str, name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"script.py": value}}  # fmt: skip


def write(path: Path, *documents: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


async def workflow_exists(stack: CliStack, workflow_id: str) -> bool:
    try:
        await stack.client.get_workflow_handle(workflow_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


def configmap_value(stack: CliStack, namespace: str, name: str) -> str | None:
    try:
        found = k8s.CoreV1Api(stack.api_client).read_namespaced_config_map(name, namespace)
    except k8s.ApiException as error:
        if error.status == 404:
            return None
        raise
    return str(found.data["script.py"])


async def test_a_file_with_a_rayjob_and_its_configmap_applies_both_in_order(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace = cli_stack.namespace()
    manifest = write(
        tmp_path / "job.yaml", rayjob(namespace, name="with-script"), configmap(namespace, "script", "v1")
    )
    first = await cli_stack.run("apply", "-f", manifest)
    assert first.code == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith(f"rayjob/{namespace}/with-script started")
    assert lines[1] == f"configmap/{namespace}/script created"
    assert configmap_value(cli_stack, namespace, "script") == "v1"

    again = await cli_stack.run("apply", "-f", manifest)
    assert again.stdout.splitlines()[1] == f"configmap/{namespace}/script unchanged"
    changed = write(
        tmp_path / "job.yaml", rayjob(namespace, name="with-script"), configmap(namespace, "script", "v2")
    )
    updated = await cli_stack.run("apply", "-f", changed)
    assert updated.stdout.splitlines()[1] == f"configmap/{namespace}/script configured"
    assert configmap_value(cli_stack, namespace, "script") == "v2"


async def test_directories_and_repeated_files_apply_every_document(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace = cli_stack.namespace()
    directory = tmp_path / "manifests"
    directory.mkdir()
    write(directory / "a.yaml", configmap(namespace, "a", "1"))
    write(directory / "b.json", configmap(namespace, "b", "2"))
    single = write(tmp_path / "c.yaml", configmap(namespace, "c", "3"))
    result = await cli_stack.run("apply", "-f", str(directory), "-f", single)
    assert result.code == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()] == [
        f"configmap/{namespace}/{name}" for name in ("a", "b", "c")
    ]


async def test_generate_name_makes_a_new_object_and_workflow_each_time(cli_stack: CliStack) -> None:
    namespace = cli_stack.namespace()
    text = yaml.safe_dump(rayjob(namespace, generateName="nightly-"))
    names = []
    for _ in range(2):
        result = await cli_stack.run("apply", "-f", "-", stdin=text)
        assert result.code == 0, result.stderr
        ref = result.stdout.split()[0]
        assert ref.startswith(f"rayjob/{namespace}/nightly-")
        assert len(ref.rsplit("/", 1)[1]) == len("nightly-") + 5
        assert await workflow_exists(cli_stack, ref)
        names.append(ref)
    assert names[0] != names[1]


async def test_a_missing_namespace_rejects_the_input_in_the_api_servers_words(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace = cli_stack.namespace()
    manifest = write(
        tmp_path / "m.yaml", configmap(namespace, "first", "x"), rayjob("no-such-namespace", name="lost")
    )
    result = await cli_stack.run("apply", "-f", manifest)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.strip() == 'error: namespaces "no-such-namespace" not found'
    assert not await workflow_exists(cli_stack, "rayjob/no-such-namespace/lost")
    assert configmap_value(cli_stack, namespace, "first") is None  # nothing applied, not even the first


async def test_a_namespace_created_by_the_same_input_is_not_missing(
    cli_stack: CliStack, tmp_path: Path
) -> None:
    namespace = f"made-{uuid.uuid4().hex[:8]}"
    created = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    result = await cli_stack.run(
        "apply", "-f", write(tmp_path / "m.yaml", created, configmap(namespace, "x", "1"))
    )
    assert result.code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"namespace/{namespace} created",
        f"configmap/{namespace}/x created",
    ]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, "metadata.name: Required value"),
        ({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}},
         'no matches for kind "Widget"'),
        ({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "x"}, "spec": {"bogus": 1}},
         'unknown field "spec.bogus"'),
    ],
)  # fmt: skip
async def test_one_bad_document_rejects_the_whole_file(
    cli_stack: CliStack, tmp_path: Path, bad: dict[str, Any], message: str
) -> None:
    namespace = cli_stack.namespace()
    manifest = write(tmp_path / "m.yaml", rayjob(namespace, name="good"), configmap(namespace, "c", "1"), bad)
    result = await cli_stack.run("apply", "-f", manifest)
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"error: {manifest}#3: ")
    assert message in result.stderr
    assert not await workflow_exists(cli_stack, f"rayjob/{namespace}/good")
    assert configmap_value(cli_stack, namespace, "c") is None


async def test_without_kubernetes_access_only_ray_objects_apply(cli_stack: CliStack, tmp_path: Path) -> None:
    """The CLI may talk only to Temporal (the worker holds the cluster access): a RayJob still starts, but an
    object that must go to Kubernetes rejects the input."""
    namespace = cli_stack.namespace()
    env = {key: value for key, value in cli_stack.env.items() if key != "KUBECONFIG"}
    without = CliStack(env, cli_stack.kube, cli_stack.client, cli_stack.api_client)
    mixed = write(tmp_path / "mixed.yaml", rayjob(namespace, name="mixed"), configmap(namespace, "c", "1"))
    rejected = await without.run("apply", "-f", mixed)
    assert rejected.code == 2
    assert "no Kubernetes configuration" in rejected.stderr
    alone = await without.run("apply", "-f", write(tmp_path / "alone.yaml", rayjob(namespace, name="alone")))
    assert alone.code == 0, alone.stderr
    assert await workflow_exists(cli_stack, f"rayjob/{namespace}/alone")


async def test_a_user_who_may_not_read_namespaces_is_not_stopped(cli_stack: CliStack, tmp_path: Path) -> None:
    """In a shared cluster a user may work in a namespace without being allowed to get Namespace objects."""
    namespace = cli_stack.namespace()
    # A ServiceAccount with Kubernetes' `edit` role in the namespace alone: it may not get Namespaces.
    plane, user = cli_stack.kube.plane, "namespace-editor"
    plane.kubectl("create", "serviceaccount", user, "-n", namespace)
    plane.kubectl(
        "create",
        "rolebinding",
        user,
        "--clusterrole=edit",
        f"--serviceaccount={namespace}:{user}",
        "-n",
        namespace,
    )
    identity = f"system:serviceaccount:{namespace}:{user}"
    assert (
        plane.kubectl("auth", "can-i", "get", f"namespace/{namespace}", "--as", identity, check=False).strip()
        == "no"
    )
    token = plane.kubectl("create", "token", user, "-n", namespace).strip()
    kubeconfig = tmp_path / "user.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(token_kubeconfig(plane.server, plane.certs, user, token)))
    editor = CliStack(
        {**cli_stack.env, "KUBECONFIG": str(kubeconfig)},
        cli_stack.kube,
        cli_stack.client,
        cli_stack.api_client,
    )
    result = await editor.run("apply", "-f", write(tmp_path / "m.yaml", configmap(namespace, "c", "1")))
    assert result.code == 0, result.stderr
    assert configmap_value(cli_stack, namespace, "c") == "1"
