from __future__ import annotations

import pytest

from models.operator import OperatorConfig, operator_config_from_env


def test_empty_environment_gives_kuberay_defaults() -> None:
    config = operator_config_from_env({})
    # The one raypilot setting: the job observer is on unless RAYPILOT_JOB_OBSERVER=false.
    assert config == OperatorConfig(job_observer=True)
    assert operator_config_from_env({"RAYPILOT_JOB_OBSERVER": "True"}).job_observer
    assert operator_config_from_env({"RAYPILOT_JOB_OBSERVER": "yes"}).job_observer
    assert not operator_config_from_env({"RAYPILOT_JOB_OBSERVER": "false"}).job_observer
    assert not operator_config_from_env({"RAYPILOT_JOB_OBSERVER": " FALSE "}).job_observer
    # A configuration recorded before the setting existed decodes as off (the runs that recorded it polled).
    assert not OperatorConfig.model_validate({}).job_observer
    assert config.feature_gates.ray_job_deletion_policy
    assert config.feature_gates.ray_service_incremental_upgrade
    assert (config.job_transition_grace_seconds, config.job_status_check_timeout_seconds) == (300, 300)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("false", False), ("FALSE", False), ("False", False), ("true", True), ("", True), ("no", True)],
)
def test_enable_zero_downtime_is_off_only_for_false(value: str, expected: bool) -> None:
    assert operator_config_from_env({"ENABLE_ZERO_DOWNTIME": value}).enable_zero_downtime is expected


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("TRUE", True), ("1", False), ("", False)])
def test_delete_rayjob_after_finish_needs_true(value: str, expected: bool) -> None:
    config = operator_config_from_env({"DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": value})
    assert config.delete_rayjob_after_job_finishes is expected


@pytest.mark.parametrize(
    ("value", "expected"), [("120", 120), ("invalid", 300), ("-5", -5), ("0", 0), (" 120", 300), ("+7", 7)]
)
def test_grace_period_parses_like_atoi(value: str, expected: int) -> None:
    # KubeRay accepts negative grace periods (Atoi succeeds) and falls back only on parse errors.
    env = {"RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS": value}
    assert operator_config_from_env(env).job_transition_grace_seconds == expected


@pytest.mark.parametrize(("value", "expected"), [("120", 120), ("invalid", 300), ("0", 300), ("-1", 300)])
def test_status_check_timeout_needs_a_positive_number(value: str, expected: int) -> None:
    env = {"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": value}
    assert operator_config_from_env(env).job_status_check_timeout_seconds == expected


def test_feature_gates_come_from_raypilot_variable() -> None:
    config = operator_config_from_env({"RAYPILOT_FEATURE_GATES": "RayJobDeletionPolicy=false"})
    assert not config.feature_gates.ray_job_deletion_policy
    assert config.feature_gates.ray_service_incremental_upgrade


def test_misspelled_feature_gate_is_an_error() -> None:
    with pytest.raises(ValueError, match="RayJobDeletionPolicyy"):
        operator_config_from_env({"RAYPILOT_FEATURE_GATES": "RayJobDeletionPolicyy=false"})


def test_config_round_trips_through_json() -> None:
    # The workflow carries this value in its history through the pydantic converter.
    config = operator_config_from_env({"RAYPILOT_FEATURE_GATES": "RayServiceIncrementalUpgrade=false"})
    assert OperatorConfig.model_validate_json(config.model_dump_json()) == config
