"""`raypilot apply --rollout FILE`: the settings go into the `raypilot.io/rollout` annotation of every
RayService of the input, checked before anything is applied (a bad file or a bad annotation: exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from models import parse_manifest
from models.rollout import ANNOTATION_ROLLOUT, rollout_settings
from models.validation import validate
from raypilot.cli.apply_rollout import rollout_annotation_from_file, with_rollout
from raypilot.cli.apply_sources import SourceDocument
from raypilot.cli.main import main
from raypilot.runs.errors import CommandError

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SERVICE = yaml.safe_load((EXAMPLES / "rayservice-incremental.yaml").read_text())
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}


def test_every_rayservice_gets_the_files_settings_and_other_objects_are_untouched() -> None:
    annotation = rollout_annotation_from_file(str(EXAMPLES / "rollout" / "canary-steps.yaml"))
    documents = with_rollout([SourceDocument("a#1", SERVICE), SourceDocument("a#2", CONFIGMAP)], annotation)
    service = parse_manifest(documents[0].body)
    assert validate(service) is None
    settings = rollout_settings(service.metadata.annotations)
    assert settings is not None
    assert settings.traffic_steps() == [5, 50]
    assert documents[1].body == CONFIGMAP
    assert ANNOTATION_ROLLOUT not in (SERVICE["metadata"].get("annotations") or {})  # input not mutated


def test_an_input_without_a_rayservice_is_rejected() -> None:
    with pytest.raises(CommandError, match="--rollout applies to RayServices, and the input has none"):
        with_rollout([SourceDocument("c", CONFIGMAP)], "{}")


@pytest.fixture
def no_cluster_no_temporal(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Rejections come before any connection: nothing listens on port 1, and there is no kubeconfig.
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))


@pytest.mark.usefixtures("no_cluster_no_temporal")
def test_a_bad_rollout_file_rejects_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rollout = tmp_path / "rollout.yaml"
    rollout.write_text("steps: [{traffic: 5}, {pause: soon}]\n")
    manifest = tmp_path / "service.json"
    manifest.write_text(json.dumps(SERVICE))
    assert main(["apply", "-f", str(manifest), "--rollout", str(rollout)]) == 2
    error = capsys.readouterr().err
    assert f"--rollout {rollout}: {ANNOTATION_ROLLOUT}: steps[1].pause: time: invalid duration" in error


@pytest.mark.usefixtures("no_cluster_no_temporal")
def test_a_bad_annotation_rejects_the_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    service = json.loads(json.dumps(SERVICE))
    service["metadata"]["annotations"] = {ANNOTATION_ROLLOUT: "onProgressDeadline: Later"}
    manifest = tmp_path / "service.json"
    manifest.write_text(json.dumps(service))
    assert main(["apply", "-f", str(manifest)]) == 2
    expected = 'onProgressDeadline: unsupported value "Later": expected one of Abort, Degraded'
    assert expected in capsys.readouterr().err
