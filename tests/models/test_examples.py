"""Every example manifest parses, dumps back to exactly the JSON it was loaded from, and suits the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from models import (
    PodTemplateSpec,
    RayCluster,
    RayClusterSpec,
    RayJob,
    RayService,
    dump_manifest,
    load_manifest_text,
    parse_manifest,
    parse_raycluster,
)
from models.features import FeatureGates
from models.validation import validate

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_FILES = sorted([*EXAMPLES_DIR.glob("*.yaml"), *EXAMPLES_DIR.glob("*.json")])
REQUIRED_EXAMPLES = {
    "rayjob-k8sjobmode.yaml",
    "rayjob-httpmode.yaml",
    "rayjob-sidecarmode.yaml",
    "rayjob-interactivemode.yaml",
    "rayjob-clusterselector.yaml",
    "rayjob-shutdown-ttl.yaml",
    "rayjob-deletion-legacy.yaml",
    "rayjob-deletion-rules.yaml",
    "rayjob-deletion-workers.yaml",
    "rayjob-retries.yaml",
    "rayjob-deadlines.yaml",
    "raycluster.yaml",
    "rayservice-newcluster.yaml",
    "rayservice-incremental.yaml",
    "rayservice-none.yaml",
    "rayjob.json",
}
HEAD_PORTS = {"gcs-server": 6379, "dashboard": 8265, "client": 10001, "serve": 8000}
RAY_IMAGE = "rayproject/ray:2.60.0"


def parse_example(path: Path) -> RayJob | RayService | RayCluster:
    loaded = load_manifest_text(path.read_text())
    if loaded.get("kind") == "RayCluster":
        return parse_raycluster(loaded)
    return parse_manifest(loaded)


def cluster_spec_of(obj: RayJob | RayService | RayCluster) -> RayClusterSpec | None:
    if isinstance(obj, RayJob):
        return obj.spec.ray_cluster_spec
    if isinstance(obj, RayService):
        return obj.spec.ray_cluster_config
    return obj.spec


def test_all_required_examples_exist() -> None:
    missing = REQUIRED_EXAMPLES - {path.name for path in EXAMPLE_FILES}
    assert not missing


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda path: path.name)
def test_example_round_trips_exactly(path: Path) -> None:
    loaded = load_manifest_text(path.read_text())
    assert dump_manifest(parse_example(path)) == loaded


YAML_FILES = [path for path in EXAMPLE_FILES if path.suffix == ".yaml"]


@pytest.mark.parametrize("path", YAML_FILES, ids=lambda path: path.name)
def test_yaml_example_starts_with_a_comment(path: Path) -> None:
    assert path.read_text().startswith("# ")


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda path: path.name)
def test_example_follows_sandbox_conventions(path: Path) -> None:
    obj = parse_example(path)
    spec = cluster_spec_of(obj)
    if spec is None:
        assert isinstance(obj, RayJob)
        assert obj.spec.cluster_selector
        return
    head = spec.head_group_spec.template.spec.container("ray-head")
    assert head is not None, "the head container must be named ray-head"
    assert head.image == RAY_IMAGE
    assert {port.name: port.container_port for port in head.ports} == HEAD_PORTS
    templates: list[PodTemplateSpec] = [group.template for group in spec.worker_group_specs]
    for template in [spec.head_group_spec.template, *templates]:
        for container in template.spec.containers:
            assert container.image == RAY_IMAGE
            assert container.resources.requests, f"{container.name} should request (small) resources"


@pytest.mark.parametrize(
    "path", [p for p in EXAMPLE_FILES if p.name.startswith("rayservice")], ids=lambda path: path.name
)
def test_rayservice_examples_serve_the_versioned_app(path: Path) -> None:
    service = parse_example(path)
    assert isinstance(service, RayService)
    config = yaml.safe_load(service.spec.serve_config_v2)
    for application in config["applications"]:
        assert application["import_path"] == "sandbox.apps.versioned:app"
        assert application["route_prefix"] == "/"
        assert application["runtime_env"] == {}
    head = service.spec.ray_cluster_config.head_group_spec.template.spec.container("ray-head")
    assert head is not None
    assert head.env_value("APP_VERSION") == "v1"


def test_rayjob_json_is_the_contract_sample() -> None:
    job = parse_example(EXAMPLES_DIR / "rayjob.json")
    assert isinstance(job, RayJob)
    assert (job.metadata.namespace, job.metadata.name) == ("default", "sample")
    assert job.spec.submission_mode == "HTTPMode"


def test_clusterselector_example_points_at_the_raycluster_example() -> None:
    job = parse_example(EXAMPLES_DIR / "rayjob-clusterselector.yaml")
    cluster = parse_example(EXAMPLES_DIR / "raycluster.yaml")
    assert isinstance(job, RayJob)
    assert job.spec.cluster_selector == {"ray.io/cluster": cluster.metadata.name}


@pytest.mark.parametrize(
    "path", [p for p in EXAMPLE_FILES if p.name != "raycluster.yaml"], ids=lambda p: p.name
)
def test_example_passes_kuberay_validation(path: Path) -> None:
    # Examples are what users copy: each must be accepted as it is, not only parse.
    parsed = parse_example(path)
    assert not isinstance(parsed, RayCluster)
    assert validate(parsed, FeatureGates()) is None
