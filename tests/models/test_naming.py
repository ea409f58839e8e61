from __future__ import annotations

import random

import pytest

from models import naming
from models.naming import (
    SUFFIX_ALPHABET,
    ObjectRef,
    generated_cluster_name,
    head_identifier,
    ownership_label_selector,
    ownership_labels,
    parse_object_ref,
    random_suffix,
    trim_label_value,
    workflow_annotations,
    workflow_id,
)


def test_random_suffix_uses_kuberay_alphabet_and_length() -> None:
    rand = random.Random(7)
    suffixes = [random_suffix(rand) for _ in range(200)]
    assert all(len(s) == 5 for s in suffixes)
    assert set("".join(suffixes)) <= set(SUFFIX_ALPHABET)
    assert len(set(suffixes)) > 190  # random, not constant
    assert len(random_suffix(rand, 8)) == 8


def test_random_suffix_is_reproducible_from_the_random_source() -> None:
    assert random_suffix(random.Random(42)) == random_suffix(random.Random(42))


def test_generated_cluster_name_is_owner_dash_five_chars() -> None:
    name = generated_cluster_name("my-service", random.Random(1))
    prefix, suffix = name.rsplit("-", 1)
    assert prefix == "my-service"
    assert len(suffix) == 5
    assert set(suffix) <= set(SUFFIX_ALPHABET)
    assert len(name) <= naming.MAX_RAYSERVICE_NAME_LENGTH + 6 == naming.MAX_RAYCLUSTER_NAME_LENGTH


@pytest.mark.parametrize(
    ("kind", "namespace", "name", "expected"),
    [
        ("RayJob", "default", "sample", "rayjob/default/sample"),
        ("rayjob", "team-a", "job-1", "rayjob/team-a/job-1"),
        ("RayService", "default", "svc", "rayservice/default/svc"),
        ("RAYSERVICE", "prod", "svc", "rayservice/prod/svc"),
    ],
)
def test_workflow_id_and_its_inverse(kind: str, namespace: str, name: str, expected: str) -> None:
    wid = workflow_id(kind, namespace, name)
    assert wid == expected
    ref = parse_object_ref(wid)
    assert ref == ObjectRef(naming.canonical_kind(kind), namespace, name)
    assert workflow_id(*ref) == wid


def test_parse_object_ref_accepts_cli_spellings() -> None:
    assert parse_object_ref("RayService/default/my.svc") == ObjectRef("RayService", "default", "my.svc")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "rayjob",
        "rayjob/default",
        "rayjob/default/a/b",
        "raycluster/default/a",
        "rayjob//a",
        "rayjob/default/",
        "rayjob/Default/a",
        "rayjob/default/Upper",
        "rayjob/default/-lead",
        "rayjob/" + "n" * 64 + "/a",
    ],
)
def test_parse_object_ref_rejects_bad_input(text: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        parse_object_ref(text)


def test_workflow_id_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown kind 'RayCluster'"):
        workflow_id("RayCluster", "default", "x")


def test_ownership_labels_match_the_contract() -> None:
    assert ownership_labels("rayjob", "sample") == {
        "ray.io/originated-from-cr-name": "sample",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "raypilot",
    }
    assert ownership_labels("RayService", "svc")["ray.io/originated-from-crd"] == "RayService"


def test_ownership_selector_selects_the_ownership_labels() -> None:
    selector = ownership_label_selector("RayService", "svc")
    labels = ownership_labels("RayService", "svc")
    pairs = dict(term.split("=", 1) for term in selector.split(","))
    assert pairs == {k: v for k, v in labels.items() if k.startswith("ray.io/")}


def test_workflow_annotations() -> None:
    assert workflow_annotations("rayjob/default/sample") == {
        "raypilot.io/workflow-id": "rayjob/default/sample"
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("short", "short"),
        ("a" * 63, "a" * 63),
        ("x" + "a" * 63, "a" * 63),
        ("-" + "a" * 62, "r" + "a" * 62),
        ("ab-" + "c" * 61, "b-" + "c" * 61),
        ("a-" + "c" * 62, "r" + "c" * 62),
        ("", ""),
    ],
)
def test_trim_label_value_keeps_the_tail(value: str, expected: str) -> None:
    result = trim_label_value(value)
    assert len(result) <= 63
    assert result == expected


def test_head_identifier() -> None:
    assert head_identifier("svc") == "svc-head"
    long_name = "n" * 70
    assert head_identifier(long_name) == ("n" * 70 + "-head")[-63:]


def test_kuberay_constants() -> None:
    assert naming.MAX_RAYJOB_NAME_LENGTH == naming.MAX_RAYSERVICE_NAME_LENGTH == 47
    assert naming.DEFAULT_DASHBOARD_PORT == 8265
    assert naming.DEFAULT_SERVE_PORT == 8000
    assert naming.RAYCLUSTER_DELETION_DELAY_SECONDS == 60
    assert naming.KUBERAY_VERSION == "nightly"
    assert naming.ANNOTATION_HASH == "ray.io/hash-without-replicas-and-workers-to-delete"
