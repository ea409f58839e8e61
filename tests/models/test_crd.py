"""The raypilot.io CRDs: generated from the models, committed in deploy/crds, structural, and accepting every
KubeRay manifest of the examples and the corpus unchanged (nothing pruned, every type matching)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from models.crd import KINDS, PRINTER_COLUMNS, crd_name, custom_resource_definition
from models.manifest import load_manifest_documents
from raypilot.cli.crds import crd_files, run_crds

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = sorted((ROOT / "examples").glob("*.y*ml")) + sorted((ROOT / "tests" / "corpus").glob("*.yaml"))


def _schema(kind: str) -> dict[str, Any]:
    version = custom_resource_definition(kind)["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_committed_crds_are_the_generated_ones() -> None:
    for name, text in crd_files().items():
        committed = (ROOT / "deploy" / "crds" / name).read_text()
        assert committed == text, f"run: raypilot crds -o deploy/crds ({name})"


def test_check_reports_a_stale_file(tmp_path: Path) -> None:
    assert run_crds(tmp_path, check=False) == 0
    assert run_crds(tmp_path, check=True) == 0
    (tmp_path / "rayjobs.raypilot.io.yaml").write_text("stale\n")
    assert run_crds(tmp_path, check=True) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_names_status_subresource_and_columns(kind: str) -> None:
    crd = custom_resource_definition(kind)
    assert crd["metadata"]["name"] == crd_name(kind) == f"{kind.lower()}s.raypilot.io"
    assert crd["spec"]["names"]["kind"] == kind
    assert crd["spec"]["names"]["shortNames"]
    version = crd["spec"]["versions"][0]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [c.name for c in PRINTER_COLUMNS[kind]]
    assert version["additionalPrinterColumns"][-1] == {
        "name": "age",
        "type": "date",
        "jsonPath": ".metadata.creationTimestamp",
    }


def _structural_violations(node: dict[str, Any], path: str) -> list[str]:
    found = []
    if {"$ref", "anyOf", "oneOf", "allOf", "default", "nullable"} & node.keys():
        found.append(f"{path}: {sorted(node)}")
    open_node = node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string")
    if not node.get("type") and not open_node:
        found.append(f"{path}: no type")
    for name, child in node.get("properties", {}).items():
        found += _structural_violations(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            found += _structural_violations(node[key], f"{path}[{key}]")
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_schemas_are_structural(kind: str) -> None:
    assert _structural_violations(_schema(kind), kind) == []


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def _mismatches(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """What the API server would prune or reject in `value` (types, enums, required, unknown fields)."""
    if schema.get("x-kubernetes-int-or-string"):
        ok = isinstance(value, str | int) and not isinstance(value, bool)
        return [] if ok else [f"{path}: not int-or-string"]
    expected = schema.get("type")
    if expected is None:
        return []
    if not isinstance(value, _JSON_TYPES[expected]) or (expected != "boolean" and isinstance(value, bool)):
        return [f"{path}: {type(value).__name__} is not {expected}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} not in {schema['enum']}"]
    found = []
    if expected == "object":
        properties = schema.get("properties", {})
        found += [f"{path}.{name}: required" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            if name in properties:
                found += _mismatches(item, properties[name], f"{path}.{name}")
            elif isinstance(schema.get("additionalProperties"), dict):
                found += _mismatches(item, schema["additionalProperties"], f"{path}.{name}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                found.append(f"{path}.{name}: pruned (unknown field)")
    if expected == "array" and "items" in schema:
        for index, item in enumerate(value):
            found += _mismatches(item, schema["items"], f"{path}[{index}]")
    return found


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda path: path.name)
def test_kuberay_manifests_fit_the_crds_unchanged(path: Path) -> None:
    checked = 0
    for document in load_manifest_documents(path.read_text()):
        if document.get("kind") in KINDS and document.get("apiVersion") == "ray.io/v1":
            spec_schema = _schema(document["kind"])["properties"]["spec"]
            assert _mismatches(document["spec"], spec_schema, "spec") == []
            checked += 1
    assert checked or "raycluster" in path.name


def test_an_unknown_field_and_a_wrong_type_are_seen_by_the_check() -> None:
    spec_schema = _schema("RayJob")["properties"]["spec"]
    assert _mismatches({"entrypoint": 3, "bogus": 1}, spec_schema, "spec") == [
        "spec.entrypoint: int is not string",
        "spec.bogus: pruned (unknown field)",
    ]


def test_statuses_as_raypilot_writes_them_fit_the_status_schemas() -> None:
    from models.base import dump_status
    from models.rayjob import RayJobStatus
    from models.rayservice import RayServiceStatuses

    job = RayJobStatus.model_validate(
        {
            "jobStatus": "RUNNING",
            "jobDeploymentStatus": "Running",
            "rayClusterName": "a-x1y2z",
            "startTime": "2026-01-01T00:00:00Z",
            "succeeded": 0,
            "failed": 0,
            "observedGeneration": 2,
        }
    )
    service = RayServiceStatuses.model_validate(
        {
            "serviceStatus": "Running",
            "numServeEndpoints": 1,
            "activeServiceStatus": {
                "rayClusterName": "s-abcde",
                "applicationStatuses": {"app": {"status": "RUNNING"}},
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "NonZeroServeEndpoints",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    )
    assert _mismatches(dump_status(job), _schema("RayJob")["properties"]["status"], "status") == []
    assert _mismatches(dump_status(service), _schema("RayService")["properties"]["status"], "status") == []
