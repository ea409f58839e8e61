"""`raypilot.io/rollout`: what it accepts, and a bad value rejected with a message naming the field, through
the RayService validation that `raypilot apply`, a workflow start and the `apply` update all use."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from models import load_manifest_text, parse_manifest
from models.rayservice import RayService, RayServiceUpgradeType
from models.rollout import (
    ANNOTATION_ROLLOUT,
    OnProgressDeadline,
    RolloutStep,
    pause_seconds,
    rollout_settings,
)
from models.validation import validate, validate_update

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def settings_of(text: str):  # type: ignore[no-untyped-def]
    return rollout_settings({ANNOTATION_ROLLOUT: text})


def test_without_the_annotation_there_are_no_settings() -> None:
    assert rollout_settings({}) is None
    assert rollout_settings({ANNOTATION_ROLLOUT: "  "}) is None


def test_a_plan_with_non_linear_weights_pauses_and_settings() -> None:
    settings = settings_of(
        "steps: [{traffic: 1}, {pause: 30s}, {traffic: 5, pause: indefinite}, {traffic: 100}]\n"
        "progressDeadlineSeconds: 60\nonProgressDeadline: Degraded\n"
    )
    assert settings is not None
    assert settings.steps[2] == RolloutStep(traffic=5, pause="indefinite")
    assert settings.traffic_steps() == [1, 5, 100]
    deadline = (settings.progress_deadline_seconds, settings.on_progress_deadline)
    assert deadline == (60, OnProgressDeadline.DEGRADED)
    assert settings.revision_history_limit == 10


def test_json_is_accepted_too() -> None:
    settings = settings_of('{"steps": [{"traffic": 25}], "headerCanary": {"name": "x-canary", "value": "1"}}')
    assert settings is not None
    assert settings.header_canary is not None
    assert settings.header_canary.name == "x-canary"


@pytest.mark.parametrize(
    ("pause", "seconds"), [("30s", 30.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("indefinite", None)]
)
def test_pause_durations(pause: str, seconds: float | None) -> None:
    assert pause_seconds(pause) == seconds


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        ("steps: [{traffic: 150}]", "steps[0].traffic: Input should be less than or equal to 100"),
        ("steps: [{traffic: '5'}]", "steps[0].traffic: Input should be a valid integer"),
        ("steps: [{pause: 5x}]", 'steps[0].pause: time: unknown unit "x" in duration "5x"'),
        ("steps: [{pause: 0s}]", "steps[0].pause: must be a positive Go duration"),
        ("steps: [{pause: 30}]", 'steps[0].pause: must be a Go duration string (e.g. "30s") or "indefinite"'),
        ("steps: [{}]", "steps[0]: a step needs traffic, pause, analysis or mirror"),
        ("steps: [{mirror: 101}]", "steps[0].mirror: Input should be less than or equal to 100"),
        ("steps: [{mirror: 10, traffic: 5}]", "steps[0]: mirror and traffic are separate steps"),
        ("abortScaleDownDelaySeconds: 0", "abortScaleDownDelaySeconds: Input should be greater than 0"),
        ("abortScaleDownDelaySeconds: '60'", "abortScaleDownDelaySeconds: Input should be a valid integer"),
        ("abortScaleDownDelaySeconds: 2592001", "abortScaleDownDelaySeconds: Input should be less than or"),
        ("steps: [{traffic: 5}, {traffic: 1}]", "steps[1].traffic: 1 is less than an earlier step's 5"),
        ("steps: [{analysis: smoke}]", 'steps[0].analysis: no analysis named "smoke" in analyses'),
        ("analyses: [{name: a}]", "analyses[0]: an analysis needs exactly one of http, prometheus"),
        ("analyses: [{name: a, serveStatus: {}}, {name: a, serveStatus: {}}]", 'the name "a" is used twice'),
        ("analyses: [{name: p, prometheus: {address: x, query: y, successCondition: 'about 1'}}]",
         "analyses[0].prometheus.successCondition: String should match pattern"),
        ("progressDeadlineSeconds: 0", "progressDeadlineSeconds: Input should be greater than 0"),
        ("onUnhealthy: Maybe", 'onUnhealthy: unsupported value "Maybe": expected one of Abort, Wait'),
        ("onProgressDeadline: abort", "onProgressDeadline: unsupported value"),
        ("revisionHistoryLimit: -1", "revisionHistoryLimit: Input should be greater than or equal to 0"),
        ("headerCanary: {name: 'x y', value: v}", "headerCanary.name: String should match pattern"),
        ("stepz: []", 'unknown field "stepz"'),
        ("[1]", "must be an object"),
        ("steps: [", "invalid YAML or JSON"),
    ],
)  # fmt: skip
def test_a_bad_value_is_rejected_naming_the_field(annotation: str, message: str) -> None:
    with pytest.raises(ValueError, match=ANNOTATION_ROLLOUT) as raised:
        settings_of(annotation)
    assert str(raised.value).startswith(f"{ANNOTATION_ROLLOUT}: ")
    assert message in str(raised.value)


def example() -> RayService:
    parsed = parse_manifest(load_manifest_text((EXAMPLES / "rayservice-rollout.yaml").read_text()))
    assert isinstance(parsed, RayService)
    return parsed


def test_the_example_is_valid_and_its_plan_reads() -> None:
    service = example()
    assert validate(service) is None
    settings = rollout_settings(service.metadata.annotations)
    assert settings is not None
    assert settings.traffic_steps() == [1, 5, 25, 100]
    file_settings = settings_of((EXAMPLES / "rollout" / "canary-steps.yaml").read_text())
    assert file_settings is not None
    assert file_settings.traffic_steps() == [5, 50]


def test_the_rayservice_validation_rejects_a_bad_annotation_at_start_and_on_apply() -> None:
    good = example()
    bad = copy.deepcopy(good)
    bad.metadata.annotations[ANNOTATION_ROLLOUT] = "steps: [{traffic: 101}]"
    expected = f"{ANNOTATION_ROLLOUT}: steps[0].traffic: Input should be less than or equal to 100"
    assert validate(bad) == expected
    assert validate_update(good, bad) == expected


def test_a_mirror_step_and_the_abort_delay_read() -> None:
    settings = settings_of(
        "steps: [{mirror: 10}, {pause: 5m}, {mirror: 0, analysis: a}, {traffic: 20}]\n"
        "analyses: [{name: a, serveStatus: {}}]\nabortScaleDownDelaySeconds: 600"
    )
    assert settings is not None
    assert [step.mirror for step in settings.steps] == [10, None, 0, None]
    assert settings.first_mirror_step() == 0
    assert settings.abort_scale_down_delay_seconds == 600
    assert settings_of("steps: [{mirror: 0}, {traffic: 5}]").first_mirror_step() is None


def test_a_mirror_is_rejected_where_no_gateway_carries_the_traffic() -> None:
    incremental = example()
    incremental.metadata.annotations[ANNOTATION_ROLLOUT] = "steps: [{pause: 1m}, {mirror: 10}, {traffic: 5}]"
    assert validate(incremental) is None
    blue_green = copy.deepcopy(incremental)
    assert blue_green.spec.upgrade_strategy is not None
    blue_green.spec.upgrade_strategy.type = RayServiceUpgradeType.NEW_CLUSTER
    expected = (
        f"{ANNOTATION_ROLLOUT}: steps[1].mirror: mirroring needs upgradeStrategy.type "
        "NewClusterWithIncrementalUpgrade"
    )
    assert (validate(blue_green) or "").startswith(expected)
    assert (validate_update(incremental, blue_green) or "").startswith(expected)
    # mirror: 0 mirrors nothing, so it fits any strategy
    blue_green.metadata.annotations[ANNOTATION_ROLLOUT] = "steps: [{mirror: 0}, {traffic: 5}]"
    assert validate(blue_green) is None
