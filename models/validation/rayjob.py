"""RayJob validation: the CRD's CEL rules, then KubeRay's ValidateRayJobMetadata / ValidateRayJobSpec
(utils/validation.go) in its order, then what the RayCluster side would reject. First error wins."""

from __future__ import annotations

from typing import Any

import yaml

from models.features import FeatureGates
from models.formats import dns1035_label_errors, go_list
from models.meta import ObjectMeta
from models.naming import CLUSTER_SELECTOR_KEY, KIND_RAYJOB, MAX_RAYJOB_NAME_LENGTH
from models.notify import notify_error
from models.rayjob import (
    DeletionPolicyType,
    DeletionRule,
    DeletionStrategy,
    JobDeploymentStatus,
    JobSubmissionMode,
    RayJob,
)
from models.validation.raycluster import (
    carried_cluster_spec_error,
    is_autoscaling_enabled,
    managed_by_value_error,
    validate_created_cluster,
)

__all__ = [
    "CEL_DELETION_CONDITION_BOTH",
    "CEL_DELETION_CONDITION_NONE",
    "CEL_DELETION_STRATEGY_INCOMPLETE",
    "CEL_DELETION_STRATEGY_MIXED",
    "rayjob_crd_error",
    "validate_rayjob",
    "validate_rayjob_metadata",
    "validate_rayjob_spec",
    "validate_rayjob_status",
]

_DEFAULT_GATES = FeatureGates()
_SPEC_INVALID = "The RayJob spec is invalid: "

CEL_DELETION_STRATEGY_MIXED = (
    "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same "
    "deletionStrategy"
)
_REQUIRES_BOTH_OR_RULES = (
    "requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)"
)
CEL_DELETION_STRATEGY_INCOMPLETE = "deletionStrategy " + _REQUIRES_BOTH_OR_RULES
CEL_DELETION_CONDITION_BOTH = (
    "JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition."
)
CEL_DELETION_CONDITION_NONE = (
    "the deletion condition requires either the JobStatus or the JobDeploymentStatus field."
)

# Lower TTLs delete earlier: workers, then the cluster, then the RayJob itself.
_DELETION_ORDER = (
    DeletionPolicyType.DELETE_WORKERS,
    DeletionPolicyType.DELETE_CLUSTER,
    DeletionPolicyType.DELETE_SELF,
)
_CLUSTER_POLICIES = (DeletionPolicyType.DELETE_CLUSTER, DeletionPolicyType.DELETE_WORKERS)


# ---- CRD (CEL) rules: the API server rejects these before KubeRay's controller runs -------------------


def _deletion_strategy_cel_error(strategy: DeletionStrategy) -> str | None:
    has_legacy = strategy.on_success is not None or strategy.on_failure is not None
    # CEL's has() tests presence, so an explicit empty list counts as present.
    has_rules = "deletion_rules" in strategy.model_fields_set
    if has_legacy and has_rules:
        return CEL_DELETION_STRATEGY_MIXED
    if not ((strategy.on_success is not None and strategy.on_failure is not None) or has_rules):
        return CEL_DELETION_STRATEGY_INCOMPLETE
    for rule in strategy.deletion_rules:
        condition = rule.condition
        if condition.job_status is not None and condition.job_deployment_status is not None:
            return CEL_DELETION_CONDITION_BOTH
        if condition.job_status is None and condition.job_deployment_status is None:
            return CEL_DELETION_CONDITION_NONE
    return None


def rayjob_crd_error(job: RayJob) -> str | None:
    spec = job.spec
    error = managed_by_value_error(spec.managed_by)
    if error is None and spec.ray_cluster_spec is not None:
        error = managed_by_value_error(spec.ray_cluster_spec.managed_by)
    if error is None and spec.deletion_strategy is not None:
        error = _deletion_strategy_cel_error(spec.deletion_strategy)
    return error


# ---- KubeRay's controller-side validation -----------------------------------------------------------


def validate_rayjob_metadata(metadata: ObjectMeta) -> str | None:
    if len(metadata.name) > MAX_RAYJOB_NAME_LENGTH:
        limit = MAX_RAYJOB_NAME_LENGTH
        return f"The RayJob metadata is invalid: RayJob name should be no more than {limit} characters"
    errors = dns1035_label_errors(metadata.name)
    if errors:
        return (
            f"The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: {go_list(errors)}"
        )
    return None


def validate_rayjob_status(job: RayJob) -> str | None:
    """KubeRay's ValidateRayJobStatus: only InteractiveMode may wait for a job id."""
    if (
        job.status.job_deployment_status == JobDeploymentStatus.WAITING
        and job.spec.submission_mode != JobSubmissionMode.INTERACTIVE_MODE
    ):
        return (
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` "
            "when SubmissionMode is not InteractiveMode"
        )
    return None


def _legacy_deletion_error(job: RayJob, strategy: DeletionStrategy) -> str | None:
    on_success, on_failure = strategy.on_success, strategy.on_failure
    if on_success is None or on_failure is None:
        return (
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set "
            "when using the legacy deletion policy fields of DeletionStrategy"
        )
    for policy, field in ((on_success.policy, "OnSuccess"), (on_failure.policy, "OnFailure")):
        if policy is None:
            return (
                f"the DeletionPolicyType field of DeletionStrategy.{field} cannot be unset "
                "when DeletionStrategy is enabled"
            )
    if job.spec.cluster_selector:
        for policy, outcome in ((on_success.policy, "success"), (on_failure.policy, "failure")):
            if policy in _CLUSTER_POLICIES:
                return f"the ClusterSelector mode doesn't support DeletionStrategy={policy} on {outcome}"
    policies = (on_success.policy, on_failure.policy)
    if DeletionPolicyType.DELETE_WORKERS in policies and is_autoscaling_enabled(job.spec.ray_cluster_spec):
        return "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled"
    if job.spec.shutdown_after_job_finishes and DeletionPolicyType.DELETE_NONE in policies:
        # "Finshes" is KubeRay's spelling.
        return (
            _SPEC_INVALID + "shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'"
        )
    return None


def _condition_key(rule: DeletionRule) -> tuple[str, str]:
    condition = rule.condition
    if condition.job_status is not None:
        return "JobStatus", str(condition.job_status)
    return "JobDeploymentStatus", str(condition.job_deployment_status)


def _deletion_rules_error(job: RayJob, rules: list[DeletionRule]) -> str | None:
    """KubeRay collects every rule problem and joins them with newlines (errors.Join)."""
    selector_mode = bool(job.spec.cluster_selector)
    autoscaling = is_autoscaling_enabled(job.spec.ray_cluster_spec)
    ttls_by_condition: dict[tuple[str, str], dict[DeletionPolicyType, int]] = {}
    errors: list[str] = []
    for index, rule in enumerate(rules):
        prefix = f"deletionRules[{index}]: "
        condition = rule.condition
        if condition.job_status is not None and condition.job_deployment_status is not None:
            errors.append(prefix + "cannot set both JobStatus and JobDeploymentStatus at the same time")
            continue
        if condition.job_status is None and condition.job_deployment_status is None:
            errors.append(prefix + "exactly one of JobStatus and JobDeploymentStatus must be set")
            continue
        if condition.ttl_seconds < 0:
            errors.append(prefix + "TTLSeconds must be non-negative")
            continue
        if selector_mode and rule.policy in _CLUSTER_POLICIES:
            errors.append(
                prefix + f"DeletionPolicyType '{rule.policy}' not supported when ClusterSelector is set"
            )
            continue
        if autoscaling and rule.policy == DeletionPolicyType.DELETE_WORKERS:
            errors.append(
                prefix + "DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled"
            )
            continue
        key = _condition_key(rule)
        ttls = ttls_by_condition.setdefault(key, {})
        if rule.policy in ttls:
            errors.append(
                prefix + f"duplicate rule for DeletionPolicyType '{rule.policy}' and {key[0]} '{key[1]}'"
            )
            continue
        ttls[rule.policy] = condition.ttl_seconds
    # KubeRay walks JobStatus groups, then JobDeploymentStatus groups; within each, first appearance.
    for (condition_type, condition_value), ttls in sorted(
        ttls_by_condition.items(), key=lambda item: item[0][0] != "JobStatus"
    ):
        previous: tuple[DeletionPolicyType, int] | None = None
        for policy in _DELETION_ORDER:
            if policy not in ttls:
                continue
            if previous is not None and ttls[policy] < previous[1]:
                errors.append(
                    f"for {condition_type} '{condition_value}': {policy} TTL ({ttls[policy]}) must be >= "
                    f"{previous[0]} TTL ({previous[1]})"
                )
            previous = (policy, ttls[policy])
    return "\n".join(errors) if errors else None


def _deletion_configuration_error(job: RayJob, gates: FeatureGates) -> str | None:
    spec = job.spec
    if not spec.shutdown_after_job_finishes and spec.ttl_seconds_after_finished > 0:
        return (
            _SPEC_INVALID
            + "a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished"
        )
    strategy = spec.deletion_strategy
    if strategy is None:
        return None
    if not gates.ray_job_deletion_policy:
        return "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
    legacy = strategy.on_success is not None or strategy.on_failure is not None
    rules = bool(strategy.deletion_rules)
    if rules and spec.shutdown_after_job_finishes:
        return (
            _SPEC_INVALID
            + "spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive"
        )
    if rules and legacy:
        return (
            _SPEC_INVALID
            + "Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously"
        )
    if legacy:
        return _legacy_deletion_error(job, strategy)
    if rules:
        return _deletion_rules_error(job, strategy.deletion_rules)
    return _SPEC_INVALID + "DeletionStrategy " + _REQUIRES_BOTH_OR_RULES


def _runtime_env_yaml_error(text: str) -> str | None:
    """The runtime env must be YAML for a mapping (or nothing at all)."""
    try:
        parsed: Any = yaml.safe_load(text)
    except yaml.YAMLError as error:
        detail = str(error).replace("\n", " ")
        return f"failed to unmarshal RuntimeEnvYAML: {text}: error converting YAML to JSON: yaml: {detail}"
    if parsed is None or isinstance(parsed, dict):
        return None
    json_kind = (
        "bool"
        if isinstance(parsed, bool)
        else "number"
        if isinstance(parsed, int | float)
        else "array"
        if isinstance(parsed, list)
        else "string"
    )
    return (
        f"failed to unmarshal RuntimeEnvYAML: {text}: error unmarshaling JSON: while decoding JSON: "
        f"json: cannot unmarshal {json_kind} into Go value of type types.RuntimeEnvType"
    )


def _submission_mode_error(job: RayJob) -> str | None:
    spec = job.spec
    if spec.cluster_selector:
        if spec.cluster_selector.get(CLUSTER_SELECTOR_KEY, "") == "":
            return "cluster name in ClusterSelector should not be empty"
        if spec.submission_mode == JobSubmissionMode.SIDECAR_MODE:
            return "ClusterSelector is not supported in SidecarMode"
        if spec.backoff_limit > 0:
            return _SPEC_INVALID + "BackoffLimit is incompatible with ClusterSelector mode"
    if spec.submission_mode == JobSubmissionMode.INTERACTIVE_MODE and spec.backoff_limit > 0:
        return _SPEC_INVALID + "BackoffLimit is incompatible with InteractiveMode"
    if spec.submission_mode == JobSubmissionMode.SIDECAR_MODE:
        if spec.submitter_pod_template is not None:
            return "Currently, SidecarMode doesn't support SubmitterPodTemplate"
        if spec.submitter_config is not None:
            return "Currently, SidecarMode doesn't support SubmitterConfig"
        cluster = spec.ray_cluster_spec
        if cluster is not None and cluster.head_group_spec.template.spec.restart_policy not in (
            None,
            "",
            "Never",
        ):
            return "restartPolicy for head Pod should be Never or unset when using SidecarMode"
    return None


def validate_rayjob_spec(job: RayJob, gates: FeatureGates = _DEFAULT_GATES) -> str | None:
    """KubeRay's ValidateRayJobSpec (controller side only), in its order."""
    spec = job.spec
    if spec.suspend and not spec.shutdown_after_job_finishes:
        return (
            _SPEC_INVALID
            + "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"
        )
    if spec.ttl_seconds_after_finished < 0:
        return _SPEC_INVALID + "TTLSecondsAfterFinished must be a non-negative integer"
    error = _deletion_configuration_error(job, gates)
    if error:
        return error
    if spec.suspend and spec.cluster_selector:
        return _SPEC_INVALID + "the ClusterSelector mode doesn't support the suspend operation"
    if spec.ray_cluster_spec is None and not spec.cluster_selector:
        return _SPEC_INVALID + "one of RayClusterSpec or ClusterSelector must be set"
    error = _submission_mode_error(job)
    if error:
        return error
    if spec.ray_cluster_spec is not None:
        error = carried_cluster_spec_error(
            spec.ray_cluster_spec, KIND_RAYJOB, job.metadata.annotations, gates
        )
        if error:
            return _SPEC_INVALID + error
    error = _runtime_env_yaml_error(spec.runtime_env_yaml)
    if error:
        return error
    if spec.active_deadline_seconds is not None and spec.active_deadline_seconds <= 0:
        return _SPEC_INVALID + "activeDeadlineSeconds must be a positive integer"
    if spec.pre_running_deadline_seconds is not None and spec.pre_running_deadline_seconds <= 0:
        return _SPEC_INVALID + "preRunningDeadlineSeconds must be a positive integer"
    if spec.backoff_limit < 0:
        return _SPEC_INVALID + "backoffLimit must be a positive integer"
    return None


def validate_rayjob(job: RayJob, gates: FeatureGates = _DEFAULT_GATES) -> str | None:
    """Everything KubeRay (API server, then controller) would reject about this RayJob, first error only.

    Order: CRD CEL rules (managedBy values, deletionStrategy and deletion conditions), metadata,
    ValidateRayJobSpec, then the RayCluster-side rules for the cluster this RayJob would create.
    """
    error = (
        rayjob_crd_error(job) or validate_rayjob_metadata(job.metadata) or validate_rayjob_spec(job, gates)
    )
    if error is None and job.spec.ray_cluster_spec is not None and not job.spec.cluster_selector:
        error = validate_created_cluster(job.spec.ray_cluster_spec, KIND_RAYJOB)
    # raypilot: the `raypilot.io/notify` annotation, checked like the spec (models/notify.py).
    return error or notify_error(job.metadata.annotations, KIND_RAYJOB)
