"""What `raypilot apply` does with each document of its input (cli/apply_plan.py, apply_sources.py)."""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest

from models import ManifestError
from models.features import FeatureGates
from models.manifest import load_manifest_documents
from models.naming import SUFFIX_ALPHABET, ObjectRef
from raypilot.cli.apply_plan import (
    MAX_GENERATE_NAME_PREFIX,
    KubeDocument,
    RayDocument,
    goes_to_raypilot,
    name_from_generate_name,
    namespaces_to_check,
    object_label,
    planned_document,
)
from raypilot.cli.apply_sources import read_documents
from raypilot.cli.common import Console
from raypilot.runs.errors import CommandError
from tests.models.kuberay_documents import HEAD_ONLY_CLUSTER_SPEC


def rayjob(metadata: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": metadata,
        "spec": {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": HEAD_ONLY_CLUSTER_SPEC},
    }


def configmap(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"a": "b"}}


def plan_of(document: dict[str, Any]) -> RayDocument | KubeDocument:
    return planned_document(document, "file.yaml", FeatureGates(), random.Random(7))


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("ray.io/v1", "RayJob", True),
        ("ray.io/v1", "RayService", True),
        ("ray.io/v1", "RayCronJob", True),
        ("ray.io/v1alpha1", "RayJob", True),  # rejected later with KubeRay's expectation, never sent on
        ("ray.io/v1", "RayCluster", False),  # KubeRay's RayCluster controller's, applied to Kubernetes
        ("v1", "ConfigMap", False),
        ("batch/v1", "Job", False),
        ("example.com/v1", "RayJob", False),
        (None, "RayJob", False),
    ],
)
def test_goes_to_raypilot(api_version: str | None, kind: str, expected: bool) -> None:
    assert goes_to_raypilot(api_version, kind) is expected


@pytest.mark.parametrize(
    ("prefix", "kept"),
    [
        ("rayjob-sample-", "rayjob-sample-"),
        ("x", "x"),
        ("p" * 70, "p" * MAX_GENERATE_NAME_PREFIX),  # the API server keeps 58 characters of the prefix
    ],
)
def test_name_from_generate_name_is_the_prefix_and_five_kubernetes_characters(prefix: str, kept: str) -> None:
    name = name_from_generate_name(prefix, random.Random(1))
    assert name.startswith(kept)
    suffix = name[len(kept) :]
    assert len(suffix) == 5
    assert set(suffix) <= set(SUFFIX_ALPHABET)


def test_generated_names_differ_between_draws() -> None:
    rand = random.Random(3)
    assert len({name_from_generate_name("job-", rand) for _ in range(20)}) == 20


@pytest.mark.parametrize(
    ("metadata", "name_prefix", "namespace"),
    [
        ({"name": "fixed"}, "fixed", "default"),
        ({"name": "fixed", "generateName": "ignored-"}, "fixed", "default"),  # a name wins, as in Kubernetes
        ({"generateName": "rayjob-sample-", "namespace": "team"}, "rayjob-sample-", "team"),
    ],
)
def test_a_rayjob_goes_to_its_workflow_with_its_name(
    metadata: dict[str, Any], name_prefix: str, namespace: str
) -> None:
    planned = plan_of(rayjob(metadata))
    assert isinstance(planned, RayDocument)
    assert planned.ref.kind == "RayJob"
    assert planned.ref.namespace == namespace
    assert planned.ref.name.startswith(name_prefix)
    assert planned.manifest["metadata"]["name"] == planned.ref.name
    if "name" not in metadata:
        assert len(planned.ref.name) == len(name_prefix) + 5
        assert planned.manifest["metadata"]["generateName"] == name_prefix  # kept, as the API server does


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (rayjob({}), "metadata.name: Field required"),
        # The generated name is validated as KubeRay validates any name: 45 + 5 > 47.
        (rayjob({"generateName": "g" * 45}), "RayJob name should be no more than 47 characters"),
        (
            {**rayjob({"name": "x"}), "apiVersion": "ray.io/v1alpha1"},
            'unsupported apiVersion "ray.io/v1alpha1"',
        ),
        (
            # A RayCronJob is read and validated as KubeRay would (without a spec it is not one).
            {"apiVersion": "ray.io/v1", "kind": "RayCronJob", "metadata": {"name": "c"}},
            "spec: Field required",
        ),
        (
            rayjob({"name": "x", "annotations": {"raypilot.io/retry-policy": "{classes: {Typo: {}}}"}}),
            "metadata.annotations[raypilot.io/retry-policy]: classes.Typo",
        ),
        (
            rayjob({"name": "x", "annotations": {"raypilot.io/cleanup-after": "soon"}}),
            "metadata.annotations[raypilot.io/cleanup-after]",
        ),
        (configmap({}), "ConfigMap: metadata.name: Required value"),
        ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "apiVersion not set"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "kind not set"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "ConfigMap: metadata not set"),
    ],
)
def test_a_document_that_cannot_be_applied_is_rejected(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as raised:
        plan_of(document)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("metadata", "name", "namespace"),
    [
        ({"name": "code"}, "code", "default"),
        ({"name": "code", "namespace": "team"}, "code", "team"),
        ({"generateName": "code-"}, None, "default"),  # the API server picks the name (create)
    ],
)
def test_another_object_goes_to_kubernetes(
    metadata: dict[str, Any], name: str | None, namespace: str
) -> None:
    planned = plan_of(configmap(metadata))
    assert planned == KubeDocument("file.yaml", "v1", "ConfigMap", namespace, name, configmap(metadata))


def test_namespaces_to_check_skips_cluster_scoped_kinds_and_namespaces_the_input_creates() -> None:
    plan = [
        RayDocument("a", ObjectRef("RayJob", "team", "job"), {}),
        KubeDocument("b", "v1", "ConfigMap", "team", "code", {}),
        KubeDocument("c", "v1", "ConfigMap", "made-here", "code", {}),
        KubeDocument("d", "scheduling.volcano.sh/v1beta1", "Queue", "default", "q", {}),
        KubeDocument("e", "v1", "Namespace", "default", "made-here", {}),
        RayDocument("f", ObjectRef("RayService", "other", "svc"), {}),
    ]
    scoped = frozenset({("scheduling.volcano.sh/v1beta1", "Queue"), ("v1", "Namespace")})
    assert namespaces_to_check(plan, scoped) == ["team", "other"]


@pytest.mark.parametrize(
    ("kind", "api_version", "namespace", "expected"),
    [
        ("RayJob", "ray.io/v1", "ns", "rayjob/ns/x"),
        ("ConfigMap", "v1", "ns", "configmap/ns/x"),
        ("Role", "rbac.authorization.k8s.io/v1", "ns", "role.rbac.authorization.k8s.io/ns/x"),
        ("Queue", "scheduling.volcano.sh/v1beta1", None, "queue.scheduling.volcano.sh/x"),
    ],
)
def test_object_label(kind: str, api_version: str, namespace: str | None, expected: str) -> None:
    assert object_label(kind, api_version, namespace, "x") == expected


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("a: 1\n---\nb: 2\n", 2),
        ("---\na: 1\n---\n---\n", 1),  # empty documents are skipped
        ('{"a": 1}', 1),
        ("# only a comment\n", 0),
    ],
)
def test_load_manifest_documents(text: str, count: int) -> None:
    assert len(load_manifest_documents(text)) == count


def test_a_document_that_is_not_a_mapping_is_named() -> None:
    with pytest.raises(ManifestError, match="document 2: a manifest must be a mapping"):
        load_manifest_documents("a: 1\n---\n- x\n")


def test_sources_are_read_in_order_with_directories_sorted_and_lists_expanded(tmp_path: Path) -> None:
    directory = tmp_path / "dir"
    directory.mkdir()
    (directory / "b.yaml").write_text("kind: B\n---\nkind: C\n")
    (directory / "a.json").write_text('{"kind": "List", "items": [{"kind": "A1"}, {"kind": "A2"}]}')
    (directory / "notes.txt").write_text("kind: Ignored\n")
    single = tmp_path / "single.yml"
    single.write_text("kind: S\n")
    console = Console(stdin=io.StringIO("kind: In\n"))
    documents = read_documents([str(single), str(directory), "-"], console)
    assert [(document.origin, document.body["kind"]) for document in documents] == [
        (str(single), "S"),
        (f"{directory / 'a.json'}#1", "A1"),
        (f"{directory / 'a.json'}#2", "A2"),
        (f"{directory / 'b.yaml'}#1", "B"),
        (f"{directory / 'b.yaml'}#2", "C"),
        ("<stdin>", "In"),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("a: 1\n---\nb: [unclosed\n", "invalid YAML at line"),
    ],
)
def test_an_unreadable_source_rejects_the_input(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "m.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(CommandError) as raised:
        read_documents([str(path)], Console())
    assert raised.value.exit_code == 2
    assert message in str(raised.value)


CORPUS = Path(__file__).parents[2] / "corpus"


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.yaml")), ids=lambda path: path.stem)
def test_every_corpus_document_is_accepted(path: Path) -> None:
    """The corpus (tests/raypilot/cli/test_corpus.py runs it on the sandbox) passes every check before
    applying."""
    documents = read_documents([str(path)], Console())
    planned = [plan_of(document.body) for document in documents]
    assert sum(isinstance(item, RayDocument) for item in planned) == 1
