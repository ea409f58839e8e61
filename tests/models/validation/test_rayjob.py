"""RayJob validation: CEL rules, KubeRay's metadata/spec/status tables, RayCluster-side rules."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from models.features import FeatureGates
from models.rayjob import RayJob
from models.validation import (
    CEL_DELETION_CONDITION_BOTH,
    CEL_DELETION_CONDITION_NONE,
    CEL_DELETION_STRATEGY_INCOMPLETE,
    CEL_DELETION_STRATEGY_MIXED,
    CEL_MANAGED_BY_VALUE,
    validate_rayjob,
    validate_rayjob_spec,
    validate_rayjob_status,
)
from tests.models.kuberay_documents import (
    DELETE,
    DNS1035_LABEL_RULE,
    kuberay_test_cluster,
    named_cases,
    patched,
    sample,
)
from tests.models.kuberay_documents import deletion_rule as rule  # short: the cases below are a table

J = "The RayJob spec is invalid: "
REQUIRES_BOTH = J + " ".join(
    [
        "DeletionStrategy requires either BOTH onSuccess and onFailure,",
        "OR the deletionRules field (cannot be empty)",
    ]
)


def base() -> dict[str, Any]:
    cluster = kuberay_test_cluster("2.60.0", "rayproject/ray", min_replicas=1, max_replicas=3)
    return sample("RayJob", "sample-job", {"entrypoint": "python -c 'print(1)'", "rayClusterSpec": cluster})


def rayjob(changes: dict[str, Any]) -> RayJob:
    return RayJob.model_validate(patched(base(), changes))


def rules(*items: dict[str, Any]) -> dict[str, Any]:
    return {"spec.deletionStrategy": {"deletionRules": list(items)}}


def legacy(on_success: str | None, on_failure: str | None) -> dict[str, Any]:
    strategy: dict[str, Any] = {}
    if on_success is not None:
        strategy["onSuccess"] = {"policy": on_success}
    if on_failure is not None:
        strategy["onFailure"] = {"policy": on_failure}
    return {"spec.deletionStrategy": strategy}


NO_CLUSTER = {"spec.rayClusterSpec": DELETE}
SELECTOR = {**NO_CLUSTER, "spec.clusterSelector": {"ray.io/cluster": "ray-cluster"}}
AUTOSCALING = {"spec.rayClusterSpec.enableInTreeAutoscaling": True}
SHUTDOWN = {"spec.shutdownAfterJobFinishes": True}

CASES: list[tuple[str, dict[str, Any], str | None]] = [
    # passing cases of KubeRay's tables
    ("valid", {}, None),
    ("suspend with shutdown", {"spec.suspend": True, **SHUTDOWN}, None),
    (
        "interactive with backoffLimit 0",
        {"spec.submissionMode": "InteractiveMode", "spec.backoffLimit": 0},
        None,
    ),
    ("shutdown with a ttl", {**SHUTDOWN, "spec.ttlSecondsAfterFinished": 5}, None),
    ("cluster selector", SELECTOR, None),
    ("sidecar mode", {"spec.submissionMode": "SidecarMode"}, None),
    ("legacy DeleteCluster with shutdown", {**legacy("DeleteCluster", "DeleteCluster"), **SHUTDOWN}, None),
    (
        "staged rules on SUCCEEDED and one on FAILED",
        rules(
            rule("DeleteWorkers", 10, "SUCCEEDED"),
            rule("DeleteCluster", 20, "SUCCEEDED"),
            rule("DeleteSelf", 30, "SUCCEEDED"),
            rule("DeleteSelf", 0, "FAILED"),
        ),
        None,
    ),
    (
        "rules on deployment status Failed",
        rules(rule("DeleteCluster", 10, deployment="Failed"), rule("DeleteSelf", 20, deployment="Failed")),
        None,
    ),
    (
        "TTL order is checked per condition value only",
        rules(rule("DeleteWorkers", 10, "FAILED"), rule("DeleteCluster", 20, deployment="Failed")),
        None,
    ),
    ("external manager", {"spec.managedBy": "kueue.x-k8s.io/multikueue"}, None),
    ("runtime env mapping", {"spec.runtimeEnvYAML": "pip:\n  - requests\nenv_vars:\n  A: b\n"}, None),
    ("deadlines", {"spec.activeDeadlineSeconds": 10, "spec.preRunningDeadlineSeconds": 5}, None),
    (
        "a selector makes the cluster spec unused",
        {
            "spec.clusterSelector": {"ray.io/cluster": "c"},
            "spec.rayClusterSpec.upgradeStrategy": {"type": "Recreate"},
        },
        None,
    ),
    # CRD CEL rules
    ("managedBy not allowed", {"spec.managedBy": "controller.com/invalid"}, CEL_MANAGED_BY_VALUE),
    ("managedBy empty", {"spec.managedBy": ""}, CEL_MANAGED_BY_VALUE),
    ("cluster managedBy not allowed", {"spec.rayClusterSpec.managedBy": "x"}, CEL_MANAGED_BY_VALUE),
    ("empty deletionStrategy", {"spec.deletionStrategy": {}}, CEL_DELETION_STRATEGY_INCOMPLETE),
    ("legacy onSuccess only", legacy("DeleteCluster", None), CEL_DELETION_STRATEGY_INCOMPLETE),
    (
        "legacy and rules together",
        {
            "spec.deletionStrategy": {
                "onSuccess": {"policy": "DeleteCluster"},
                "deletionRules": [rule("DeleteSelf")],
            }
        },
        CEL_DELETION_STRATEGY_MIXED,
    ),
    (
        "condition with both statuses",
        rules(rule("DeleteCluster", 10, "FAILED", "Failed")),
        CEL_DELETION_CONDITION_BOTH,
    ),
    ("condition with no status", rules(rule("DeleteCluster", 10)), CEL_DELETION_CONDITION_NONE),
    # metadata
    (
        "name too long",
        {"metadata.name": "j" * 48},
        "The RayJob metadata is invalid: RayJob name should be no more than 47 characters",
    ),
    ("name of 47 characters", {"metadata.name": "j" * 47}, None),
    (
        "name not a DNS-1035 label",
        {"metadata.name": "1-job"},
        "The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: " + DNS1035_LABEL_RULE,
    ),
    # ValidateRayJobSpec, in order
    (
        "suspend without shutdown",
        {"spec.suspend": True},
        J + "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended",
    ),
    (
        "negative ttl",
        {**SHUTDOWN, "spec.ttlSecondsAfterFinished": -5},
        J + "TTLSecondsAfterFinished must be a non-negative integer",
    ),
    (
        "ttl without shutdown",
        {"spec.ttlSecondsAfterFinished": 5},
        J + "a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished",
    ),
    (
        "deletionRules with shutdown",
        {**rules(rule("DeleteSelf", 10, "SUCCEEDED")), **SHUTDOWN},
        J + "spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive",
    ),
    (
        "empty deletionRules list",
        {"spec.deletionStrategy": {"deletionRules": []}},
        REQUIRES_BOTH,
    ),
    (
        "legacy policy unset",
        {"spec.deletionStrategy": {"onSuccess": {"policy": "DeleteNone"}, "onFailure": {}}},
        "the DeletionPolicyType field of DeletionStrategy.OnFailure cannot be unset when DeletionStrategy "
        "is enabled",
    ),
    (
        "legacy DeleteCluster with a selector",
        {**legacy("DeleteCluster", "DeleteCluster"), **SELECTOR},
        "the ClusterSelector mode doesn't support DeletionStrategy=DeleteCluster on success",
    ),
    (
        "legacy DeleteWorkers on failure with a selector",
        {**legacy("DeleteNone", "DeleteWorkers"), **SELECTOR},
        "the ClusterSelector mode doesn't support DeletionStrategy=DeleteWorkers on failure",
    ),
    (
        "legacy DeleteWorkers with autoscaling",
        {**legacy("DeleteWorkers", "DeleteWorkers"), **AUTOSCALING},
        "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled",
    ),
    (
        "legacy DeleteNone with shutdown",
        {**legacy("DeleteNone", "DeleteNone"), **SHUTDOWN},
        J + "shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'",
    ),
    (
        "rule with negative ttl",
        rules(rule("DeleteSelf", -10, "SUCCEEDED")),
        "deletionRules[0]: TTLSeconds must be non-negative",
    ),
    (
        "rule DeleteWorkers with a selector",
        {**rules(rule("DeleteWorkers", 10, "SUCCEEDED")), **SELECTOR},
        "deletionRules[0]: DeletionPolicyType 'DeleteWorkers' not supported when ClusterSelector is set",
    ),
    (
        "rule DeleteCluster with a selector",
        {**rules(rule("DeleteCluster", 10, "SUCCEEDED")), **SELECTOR},
        "deletionRules[0]: DeletionPolicyType 'DeleteCluster' not supported when ClusterSelector is set",
    ),
    ("rule DeleteSelf with a selector", {**rules(rule("DeleteSelf", 10, "SUCCEEDED")), **SELECTOR}, None),
    (
        "rule DeleteWorkers with autoscaling",
        {**rules(rule("DeleteWorkers", 10, "SUCCEEDED")), **AUTOSCALING},
        "deletionRules[0]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled",
    ),
    (
        "duplicate rule",
        rules(rule("DeleteSelf", 10, "SUCCEEDED"), rule("DeleteSelf", 20, "SUCCEEDED")),
        "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteSelf' and JobStatus 'SUCCEEDED'",
    ),
    (
        "duplicate rule on the deployment status",
        rules(rule("DeleteCluster", 10, deployment="Failed"), rule("DeleteCluster", 20, deployment="Failed")),
        "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteCluster' and JobDeploymentStatus "
        "'Failed'",
    ),
    (
        "workers after the cluster",
        rules(rule("DeleteWorkers", 20, "SUCCEEDED"), rule("DeleteCluster", 10, "SUCCEEDED")),
        "for JobStatus 'SUCCEEDED': DeleteCluster TTL (10) must be >= DeleteWorkers TTL (20)",
    ),
    (
        "cluster after the RayJob",
        rules(rule("DeleteCluster", 20, "SUCCEEDED"), rule("DeleteSelf", 10, "SUCCEEDED")),
        "for JobStatus 'SUCCEEDED': DeleteSelf TTL (10) must be >= DeleteCluster TTL (20)",
    ),
    (
        "workers after the cluster on the deployment status",
        rules(rule("DeleteWorkers", 20, deployment="Failed"), rule("DeleteCluster", 10, deployment="Failed")),
        "for JobDeploymentStatus 'Failed': DeleteCluster TTL (10) must be >= DeleteWorkers TTL (20)",
    ),
    (
        "suspend with a selector",
        {"spec.suspend": True, **SHUTDOWN, **SELECTOR},
        J + "the ClusterSelector mode doesn't support the suspend operation",
    ),
    (
        "neither cluster spec nor selector",
        NO_CLUSTER,
        J + "one of RayClusterSpec or ClusterSelector must be set",
    ),
    (
        "selector without a cluster name",
        {**NO_CLUSTER, "spec.clusterSelector": {"key": "value"}},
        "cluster name in ClusterSelector should not be empty",
    ),
    (
        "selector with an empty cluster name",
        {**NO_CLUSTER, "spec.clusterSelector": {"ray.io/cluster": ""}},
        "cluster name in ClusterSelector should not be empty",
    ),
    (
        "selector in sidecar mode",
        {**SELECTOR, "spec.submissionMode": "SidecarMode"},
        "ClusterSelector is not supported in SidecarMode",
    ),
    (
        "selector with retries",
        {**SELECTOR, "spec.backoffLimit": 1},
        J + "BackoffLimit is incompatible with ClusterSelector mode",
    ),
    (
        "interactive with retries",
        {"spec.submissionMode": "InteractiveMode", "spec.backoffLimit": 1},
        J + "BackoffLimit is incompatible with InteractiveMode",
    ),
    (
        "sidecar with a submitter template",
        {"spec.submissionMode": "SidecarMode", "spec.submitterPodTemplate": {"spec": {}}},
        "Currently, SidecarMode doesn't support SubmitterPodTemplate",
    ),
    (
        "sidecar with a submitter config",
        {"spec.submissionMode": "SidecarMode", "spec.submitterConfig": {"backoffLimit": 1}},
        "Currently, SidecarMode doesn't support SubmitterConfig",
    ),
    (
        "sidecar with head restartPolicy Always",
        {
            "spec.submissionMode": "SidecarMode",
            "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy": "Always",
        },
        "restartPolicy for head Pod should be Never or unset when using SidecarMode",
    ),
    (
        "sidecar with head restartPolicy Never",
        {
            "spec.submissionMode": "SidecarMode",
            "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy": "Never",
        },
        None,
    ),
    (
        "k8s token auth",
        {"spec.rayClusterSpec.authOptions": {"mode": "token", "enableK8sTokenAuth": True}},
        J + "K8s token auth mode is currently not supported for RayJob",
    ),
    (
        "head without containers",
        {"spec.rayClusterSpec.headGroupSpec.template.spec.containers": []},
        J + "headGroupSpec should have at least one container",
    ),
    (
        "suspended group with autoscaling",
        {**AUTOSCALING, "spec.rayClusterSpec.workerGroupSpecs.0.suspend": True},
        J + "worker group small-group cannot be suspended with Autoscaler enabled",
    ),
    (
        "active deadline 0",
        {"spec.activeDeadlineSeconds": 0},
        J + "activeDeadlineSeconds must be a positive integer",
    ),
    (
        "pre-running deadline 0",
        {"spec.preRunningDeadlineSeconds": 0},
        J + "preRunningDeadlineSeconds must be a positive integer",
    ),
    ("negative backoffLimit", {"spec.backoffLimit": -1}, J + "backoffLimit must be a positive integer"),
    # the RayCluster this RayJob creates
    (
        "upgradeStrategy on the cluster",
        {"spec.rayClusterSpec.upgradeStrategy": {"type": "Recreate"}},
        "upgradeStrategy cannot be set when RayCluster is created by RayJob",
    ),
]


@pytest.mark.parametrize(("changes", "expected"), named_cases(CASES))
def test_validate_rayjob(changes: dict[str, Any], expected: str | None) -> None:
    assert validate_rayjob(rayjob(changes)) == expected


@pytest.mark.parametrize(
    ("runtime_env", "expected_tail"),
    [
        ("invalid_yaml_str", "cannot unmarshal string into Go value of type types.RuntimeEnvType"),
        ("- a\n- b", "cannot unmarshal array into Go value of type types.RuntimeEnvType"),
        ("key: [unclosed", "error converting YAML to JSON: yaml: "),
    ],
)
def test_runtime_env_must_be_a_yaml_mapping(runtime_env: str, expected_tail: str) -> None:
    error = validate_rayjob(rayjob({"spec.runtimeEnvYAML": runtime_env}))
    assert error is not None
    assert error.startswith(f"failed to unmarshal RuntimeEnvYAML: {runtime_env}: ")
    assert expected_tail in error


def test_deletion_strategy_needs_its_feature_gate() -> None:
    job = rayjob(rules(rule("DeleteSelf", 10, "SUCCEEDED")))
    gates = FeatureGates(ray_job_deletion_policy=False)
    assert (
        validate_rayjob(job, gates)
        == "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
    )
    assert validate_rayjob(job) is None


def test_cel_rules_come_before_the_controller_checks() -> None:
    job = rayjob({"spec.managedBy": "other", "spec.suspend": True, "metadata.name": "x" * 60})
    assert validate_rayjob(job) == CEL_MANAGED_BY_VALUE


def test_metadata_comes_before_the_spec() -> None:
    assert validate_rayjob(rayjob({"metadata.name": "x" * 60, **NO_CLUSTER})) == (
        "The RayJob metadata is invalid: RayJob name should be no more than 47 characters"
    )


def test_duplicate_worker_group_names_are_rejected() -> None:
    document = base()
    groups = document["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    groups.append(copy.deepcopy(groups[0]))
    error = validate_rayjob(RayJob.model_validate(document))
    assert error is not None
    assert "worker group names must be unique" in error


# Controller messages that the CRD's CEL rules make unreachable through validate_rayjob.
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            legacy("DeleteCluster", None),
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the "
            "legacy "
            "deletion policy fields of DeletionStrategy",
        ),
        (
            {
                "spec.deletionStrategy": {
                    "onSuccess": {"policy": "DeleteCluster"},
                    "deletionRules": [rule("DeleteSelf", 1, "FAILED")],
                }
            },
            J + "Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously",
        ),
        (
            {"spec.deletionStrategy": {}},
            REQUIRES_BOTH,
        ),
        (
            rules(rule("DeleteCluster", 10, "FAILED", "Failed")),
            "deletionRules[0]: cannot set both JobStatus and JobDeploymentStatus at the same time",
        ),
        (
            rules(rule("DeleteCluster", 10)),
            "deletionRules[0]: exactly one of JobStatus and JobDeploymentStatus must be set",
        ),
    ],
)
def test_controller_only_messages(changes: dict[str, Any], expected: str) -> None:
    assert validate_rayjob_spec(rayjob(changes)) == expected


def test_rule_errors_are_all_reported_one_per_line() -> None:
    job = rayjob(
        rules(
            rule("DeleteSelf", -1, "SUCCEEDED"),
            rule("DeleteWorkers", 30, "FAILED"),
            rule("DeleteCluster", 20, "FAILED"),
            rule("DeleteCluster", 25, "FAILED"),
        )
    )
    assert validate_rayjob_spec(job) == "\n".join(
        [
            "deletionRules[0]: TTLSeconds must be non-negative",
            "deletionRules[3]: duplicate rule for DeletionPolicyType 'DeleteCluster' and JobStatus 'FAILED'",
            "for JobStatus 'FAILED': DeleteCluster TTL (20) must be >= DeleteWorkers TTL (30)",
        ]
    )


@pytest.mark.parametrize(
    ("mode", "deployment_status", "expected"),
    [
        (
            "K8sJobMode",
            "Waiting",
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is "
            "not "
            "InteractiveMode",
        ),
        ("InteractiveMode", "Waiting", None),
        ("HTTPMode", "Running", None),
    ],
)
def test_validate_rayjob_status(mode: str, deployment_status: str, expected: str | None) -> None:
    job = rayjob({"spec.submissionMode": mode, "status": {"jobDeploymentStatus": deployment_status}})
    assert validate_rayjob_status(job) == expected
