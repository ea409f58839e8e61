"""Every RayCronJob validation rule with KubeRay's message (utils/validation.go ValidateRayCronJobSpec), the
feature gate, and the raypilot.io/schedule annotation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from models.features import FeatureGates
from models.manifest import parse_raycronjob
from models.raycronjob import ConcurrencyPolicy, ScheduleSettings, schedule_settings
from models.validation.raycronjob import GATE_OFF, validate_raycronjob

CLUSTER_SPEC: dict[str, Any] = {
    "headGroupSpec": {
        "rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}},
    }
}

EMPTY_TIME_ZONE = (
    "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator"
)


def cronjob(
    name: str = "nightly", schedule: str = "0 3 * * *", template: dict[str, Any] | None = None, **spec: Any
) -> dict[str, Any]:
    job_template = (
        template if template is not None else {"entrypoint": "python x.py", "rayClusterSpec": CLUSTER_SPEC}
    )
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedule": schedule, "jobTemplate": copy.deepcopy(job_template), **spec},
    }


def message_of(manifest: dict[str, Any], gates: FeatureGates | None = None) -> str | None:
    return validate_raycronjob(parse_raycronjob(manifest), gates or FeatureGates())


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        (cronjob(), None),
        (cronjob(schedule="@every 1h30m"), None),
        (cronjob(timeZone="Asia/Taipei"), None),
        (cronjob(timeZone="UTC"), None),
        (cronjob(name="n" * 36), None),
        (cronjob(name="n" * 37), "RayCronJob name should be no more than 36 characters"),
        (
            cronjob(name="Nightly_Job"),
            'metadata.name: Invalid value: "Nightly_Job": a lowercase RFC 1123 subdomain must consist of',
        ),
        (
            cronjob(schedule="TZ=UTC 0 3 * * *"),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
        (
            cronjob(schedule="CRON_TZ=Asia/Taipei 0 3 * * *"),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
        # KubeRay looks for "TZ" anywhere in the schedule.
        (cronjob(schedule="@every 1TZ"), "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
        (cronjob(schedule="0 3 * *"), "invalid cron schedule: expected exactly 5 fields, found 4: [0 3 * *]"),
        (cronjob(schedule=""), "invalid cron schedule: empty spec string"),
        (cronjob(schedule="61 * * * *"), "invalid cron schedule: end of range (61) above maximum (59): 61"),
        (
            cronjob(timeZone=""),
            EMPTY_TIME_ZONE,
        ),
        (cronjob(timeZone="Mars/Olympus"), "invalid time zone: unknown time zone Mars/Olympus"),
        (cronjob(timeZone="../etc/passwd"), "invalid time zone: time: invalid location name"),
        (
            cronjob(template={"entrypoint": "python x.py"}),
            "invalid RayJob template: The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector "
            "must be set",
        ),
        (
            cronjob(template={"rayClusterSpec": CLUSTER_SPEC, "suspend": True}),
            "invalid RayJob template: The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set "
            "to false is not allowed to be suspended",
        ),
        (
            cronjob(template={"rayClusterSpec": CLUSTER_SPEC, "backoffLimit": -1}),
            "invalid RayJob template: The RayJob spec is invalid: backoffLimit must be a positive integer",
        ),
        # The CRD's CEL rule on the template: the API server's message, before any controller.
        (
            cronjob(
                template={
                    "rayClusterSpec": CLUSTER_SPEC,
                    "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}, "deletionRules": []},
                }
            ),
            "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same "
            "deletionStrategy",
        ),
        # The order of KubeRay's checks: the name first, then TZ, the schedule, the zone, the template.
        (cronjob(name="n" * 37, schedule="bad"), "RayCronJob name should be no more than 36 characters"),
        (
            cronjob(schedule="bad", timeZone=""),
            "invalid cron schedule: expected exactly 5 fields, found 1: [bad]",
        ),
        (
            cronjob(timeZone="", template={"entrypoint": "x"}),
            EMPTY_TIME_ZONE,
        ),
    ],
)
def test_kuberays_rules_and_messages(manifest: dict[str, Any], message: str | None) -> None:
    found = message_of(manifest)
    if message is not None and message.endswith(" of"):  # the API server's long regex message: its start
        assert found is not None
        assert found.startswith(message)
    else:
        assert found == message


def test_with_the_gate_off_a_raycronjob_is_rejected_saying_how_to_turn_it_on() -> None:
    assert message_of(cronjob(), FeatureGates(ray_cron_job=False)) == GATE_OFF
    assert "RAYPILOT_FEATURE_GATES" in GATE_OFF


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (None, ScheduleSettings()),
        ("", ScheduleSettings()),
        ("concurrencyPolicy: Forbid", ScheduleSettings(concurrency_policy=ConcurrencyPolicy.FORBID)),
        (
            '{"concurrencyPolicy": "BufferAll", "startingDeadlineSeconds": 300, "jitterSeconds": 30}',
            ScheduleSettings(
                concurrency_policy=ConcurrencyPolicy.BUFFER_ALL,
                starting_deadline_seconds=300,
                jitter_seconds=30,
            ),
        ),
        (
            "successfulJobsHistoryLimit: 0\nfailedJobsHistoryLimit: 5",
            ScheduleSettings(successful_jobs_history_limit=0, failed_jobs_history_limit=5),
        ),
    ],
)
def test_schedule_annotation_settings(annotation: str | None, expected: ScheduleSettings) -> None:
    annotations = {} if annotation is None else {"raypilot.io/schedule": annotation}
    assert schedule_settings(annotations) == expected


def test_batch_v1_defaults_for_history_limits() -> None:
    assert (
        ScheduleSettings().successful_jobs_history_limit,
        ScheduleSettings().failed_jobs_history_limit,
    ) == (3, 1)
    assert ScheduleSettings().concurrency_policy == ConcurrencyPolicy.ALLOW


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (
            "concurrencyPolicy: Sometimes",
            "concurrencyPolicy 'Sometimes' is not one of Allow, Forbid, Replace",
        ),
        ("startingDeadlineSeconds: -1", "startingDeadlineSeconds must be a non-negative integer, got -1"),
        ("jitterSeconds: '30'", "jitterSeconds must be a non-negative integer, got '30'"),
        ("failedJobsHistoryLimit: true", "failedJobsHistoryLimit must be a non-negative integer, got True"),
        ("suspend: true", 'unknown field "suspend"'),
        ("[1, 2]", "must be an object"),
        ("a: [", "invalid YAML or JSON"),
    ],
)
def test_a_bad_schedule_annotation_is_rejected_naming_the_field(annotation: str, message: str) -> None:
    manifest = cronjob()
    manifest["metadata"]["annotations"] = {"raypilot.io/schedule": annotation}
    found = message_of(manifest)
    assert found is not None
    assert found.startswith("raypilot.io/schedule: ")
    assert message in found
