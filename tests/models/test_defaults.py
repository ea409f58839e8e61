"""CRD defaults are visible on the models, names work both ways, and dumps never invent defaults."""

from __future__ import annotations

from typing import Any

import pytest

from models import (
    ClusterUpgradeOptions,
    DeletionCondition,
    DeletionPolicyType,
    DeletionRule,
    JobStatus,
    JobSubmissionMode,
    RayJobSpec,
    RayServiceSpec,
    RayServiceUpgradeStrategy,
    RayServiceUpgradeType,
    WorkerGroupSpec,
    dump_manifest,
)

HEAD_GROUP: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}}
WORKER_TEMPLATE: dict[str, Any] = {"spec": {"containers": [{"name": "ray-worker", "image": "ray"}]}}


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ("submission_mode", JobSubmissionMode.K8S_JOB_MODE),
        ("backoff_limit", 0),
        ("ttl_seconds_after_finished", 0),
        ("shutdown_after_job_finishes", False),
        ("suspend", False),
        ("entrypoint", ""),
        ("runtime_env_yaml", ""),
        ("entrypoint_num_cpus", 0.0),
        ("active_deadline_seconds", None),
        ("pre_running_deadline_seconds", None),
        ("cluster_selector", {}),
        ("deletion_strategy", None),
    ],
)
def test_rayjob_spec_defaults(attribute: str, expected: object) -> None:
    spec = RayJobSpec.model_validate({})
    assert getattr(spec, attribute) == expected
    assert dump_manifest(spec) == {}


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [
        ("replicas", 0),
        ("min_replicas", 0),
        ("max_replicas", 2147483647),
        ("num_of_hosts", 1),
        ("priority", 0),
        ("suspend", None),
        ("ray_start_params", {}),
    ],
)
def test_worker_group_defaults(attribute: str, expected: object) -> None:
    group = WorkerGroupSpec.model_validate({"groupName": "workers", "template": WORKER_TEMPLATE})
    assert getattr(group, attribute) == expected
    assert group.scale_strategy.workers_to_delete == []
    assert dump_manifest(group) == {"groupName": "workers", "template": WORKER_TEMPLATE}


def test_cluster_upgrade_options_default_max_surge() -> None:
    options = ClusterUpgradeOptions.model_validate(
        {"stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio"}
    )
    assert options.max_surge_percent == 100
    assert "maxSurgePercent" not in dump_manifest(options)


def test_deletion_rule_ttl_defaults_to_zero() -> None:
    rule = DeletionRule.model_validate({"policy": "DeleteSelf", "condition": {"jobStatus": "FAILED"}})
    assert rule.condition.ttl_seconds == 0
    assert rule.condition.job_status == JobStatus.FAILED
    assert rule.policy is DeletionPolicyType.DELETE_SELF


@pytest.mark.parametrize(
    ("snake_case", "camel_case", "value"),
    [
        ("runtime_env_yaml", "runtimeEnvYAML", "pip: [requests]"),
        ("ttl_seconds_after_finished", "ttlSecondsAfterFinished", 10),
        ("entrypoint_num_cpus", "entrypointNumCpus", 1.5),
        ("cluster_selector", "clusterSelector", {"ray.io/cluster": "shared"}),
        ("submission_mode", "submissionMode", JobSubmissionMode.HTTP_MODE),
        ("pre_running_deadline_seconds", "preRunningDeadlineSeconds", 30),
    ],
)
def test_rayjob_spec_accepts_both_names_and_dumps_kuberay_names(
    snake_case: str, camel_case: str, value: object
) -> None:
    by_name = RayJobSpec.model_validate({snake_case: value})
    by_alias = RayJobSpec.model_validate({camel_case: value})
    assert getattr(by_name, snake_case) == getattr(by_alias, snake_case) == value
    assert dump_manifest(by_name) == dump_manifest(by_alias) == {camel_case: value}


def test_rayservice_nested_names() -> None:
    spec = RayServiceSpec.model_validate(
        {
            "rayClusterConfig": {"headGroupSpec": HEAD_GROUP, "enableInTreeAutoscaling": True},
            "serveConfigV2": "applications: []",
            "upgradeStrategy": {
                "type": "NewClusterWithIncrementalUpgrade",
                "clusterUpgradeOptions": {
                    "maxSurgePercent": 50,
                    "stepSizePercent": 25,
                    "intervalSeconds": 5,
                    "gatewayClassName": "istio",
                },
            },
        }
    )
    assert spec.serve_config_v2 == "applications: []"
    assert spec.ray_cluster_config.enable_in_tree_autoscaling is True
    assert spec.upgrade_strategy is not None
    assert spec.upgrade_strategy.type is RayServiceUpgradeType.NEW_CLUSTER_WITH_INCREMENTAL_UPGRADE
    assert spec.upgrade_strategy.cluster_upgrade_options is not None
    assert spec.upgrade_strategy.cluster_upgrade_options.max_surge_percent == 50


def test_unknown_upgrade_type_is_kept_for_validation_to_report() -> None:
    strategy = RayServiceUpgradeStrategy.model_validate({"type": "BlueGreen"})
    assert strategy.type == "BlueGreen"
    assert not isinstance(strategy.type, RayServiceUpgradeType)


def test_assignment_marks_a_field_as_set_so_it_is_dumped() -> None:
    spec = RayJobSpec.model_validate({"entrypoint": "python job.py"})
    spec.submission_mode = JobSubmissionMode.HTTP_MODE
    assert dump_manifest(spec) == {"entrypoint": "python job.py", "submissionMode": "HTTPMode"}


def test_construct_by_python_names() -> None:
    condition = DeletionCondition(job_status=JobStatus.SUCCEEDED, ttl_seconds=5)
    assert dump_manifest(condition) == {"jobStatus": "SUCCEEDED", "ttlSeconds": 5}


def test_int32_range_is_enforced() -> None:
    with pytest.raises(ValueError, match="less than or equal to 2147483647"):
        RayJobSpec.model_validate({"backoffLimit": 2**31})
