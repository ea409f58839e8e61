"""Table tests for the RayJob workflow's small decisions (workflows/decisions/rayjob/)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from models.manifest import parse_rayjob
from models.raycluster import RayClusterStatus
from models.rayjob import JobDeploymentStatus, JobFailedReason, JobStatus, RayJob, RayJobStatus
from raypilot.testing.rayjob_scenarios import rayjob_manifest
from wire.dashboard import JobInfoAnswer
from workflows.decisions.rayjob.apply import (
    applied_job,
    is_spec_changed,
)
from workflows.decisions.rayjob.backoff import failure_backoff
from workflows.decisions.rayjob.dashboard import (
    dashboard_target,
    dashboard_url_from_cluster_status,
    rayjob_head_service_manifest,
)
from workflows.decisions.rayjob.details import phase_details
from workflows.decisions.rayjob.events import (
    EventReason,
    rayjob_event,
)
from workflows.decisions.rayjob.observations import JobInfo, JobInfoUnavailable, JobNotFound, job_info_result


def _job(**spec: Any) -> RayJob:
    return parse_rayjob(rayjob_manifest(**spec))


@pytest.mark.parametrize(
    ("reason", "error", "event_type", "message"),
    [
        (EventReason.CREATED_RAYCLUSTER, "", "Normal", "Created RayCluster ns/rc"),
        (
            EventReason.FAILED_TO_CREATE_RAYCLUSTER,
            "boom",
            "Warning",
            "Failed to create RayCluster ns/rc: boom",
        ),
        (EventReason.DELETED_RAYCLUSTER, "", "Normal", "Deleted cluster ns/rc"),
        (EventReason.FAILED_TO_DELETE_RAYCLUSTER, "boom", "Warning", "Failed to delete cluster ns/rc: boom"),
        (
            EventReason.UPDATED_RAYCLUSTER,
            "",
            "Normal",
            "Set the `suspend` field to true for all worker groups in cluster ns/rc",
        ),
        (
            EventReason.RAYCLUSTER_NOT_FOUND,
            "",
            "Warning",
            "RayCluster ns/rc set in the clusterSelector is not found. It must be created manually",
        ),
        (EventReason.CREATED_RAYJOB_SUBMITTER, "", "Normal", "Created Kubernetes Job ns/rc"),
        (
            EventReason.FAILED_TO_CREATE_RAYJOB_SUBMITTER,
            "boom",
            "Warning",
            "Failed to create new Kubernetes Job ns/rc: boom",
        ),
        (EventReason.DELETED_RAYJOB_SUBMITTER, "", "Normal", "Deleted submitter K8s Job ns/rc"),
        (EventReason.CREATED_SERVICE, "", "Normal", "Created the service ns/rc"),
        (EventReason.FAILED_TO_CREATE_SERVICE, "boom", "Warning", "Failed to create the service ns/rc, boom"),
    ],
)
def test_rayjob_event_has_kuberay_type_and_message(
    reason: EventReason, error: str, event_type: str, message: str
) -> None:
    event = rayjob_event(reason, "ns", "rc", error)
    assert (event.type, event.reason, event.message) == (event_type, reason, message)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (JobInfoAnswer("not_found"), JobNotFound()),
        (
            JobInfoAnswer("found", status="RUNNING", message="m", start_time_ms=5, end_time_ms=0),
            JobInfo(JobStatus.RUNNING, "m", 5, 0),
        ),
        (JobInfoAnswer("found", status="SUCCEEDED"), JobInfo(JobStatus.SUCCEEDED)),
        (
            JobInfoAnswer("unavailable", error="GetJobInfo fail: 503"),
            JobInfoUnavailable("GetJobInfo fail: 503"),
        ),
        (
            JobInfoAnswer("found", status="EXPLODED"),
            JobInfoUnavailable("GetJobInfo fail: unknown job status 'EXPLODED'"),
        ),
        (JobInfoAnswer("found", status=""), JobInfoUnavailable("GetJobInfo fail: empty job status")),
    ],
)
def test_job_info_result(answer: JobInfoAnswer, expected: object) -> None:
    assert job_info_result(answer) == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (
            {"head": {"serviceName": "rc-head-svc"}, "endpoints": {"dashboard": "8265"}},
            "rc-head-svc.ns.svc.cluster.local:8265",
        ),
        ({"head": {"serviceName": "rc-head-svc"}, "endpoints": {"client": "10001"}}, None),
        ({"endpoints": {"dashboard": "8265"}}, None),
        ({"head": {"serviceName": "rc-head-svc"}, "endpoints": {"dashboard": "http"}}, None),
    ],
)
def test_dashboard_url_from_cluster_status(status: dict[str, Any], expected: str | None) -> None:
    parsed = RayClusterStatus.model_validate(status)
    assert dashboard_url_from_cluster_status(parsed, "ns", "cluster.local") == expected


@pytest.mark.parametrize(
    ("auth", "url", "expected"),
    [
        (None, "rc-head-svc.default.svc.x:9000", ("rc-head-svc", 9000, None)),
        ({"mode": "token"}, "rc-head-svc.default.svc.x:8265", ("rc-head-svc", 8265, "rc")),
        ({"mode": "token", "secretName": "s"}, "", ("rc-head-svc", 8265, "s")),
    ],
)
def test_dashboard_target(
    auth: dict[str, str] | None, url: str, expected: tuple[str, int, str | None]
) -> None:
    cluster_spec = rayjob_manifest()["spec"]["rayClusterSpec"]
    if auth is not None:
        cluster_spec["authOptions"] = auth
    job = _job(rayClusterSpec=cluster_spec)
    assert job.spec.ray_cluster_spec is not None
    job = job.model_copy(update={"status": RayJobStatus(ray_cluster_name="rc", dashboard_url=url)})
    target = dashboard_target(job, job.spec.ray_cluster_spec)
    assert (target.head_service, target.dashboard_port, target.auth_secret) == expected


@pytest.mark.parametrize(
    ("cluster_ip_service", "head_service", "expected_cluster_ip"),
    [(False, None, "None"), (True, None, None), (False, {"spec": {"type": "ClusterIP"}}, None)],
)
def test_rayjob_head_service_manifest(
    cluster_ip_service: bool, head_service: dict[str, Any] | None, expected_cluster_ip: str | None
) -> None:
    cluster_spec = rayjob_manifest()["spec"]["rayClusterSpec"]
    if head_service is not None:
        cluster_spec["headGroupSpec"]["headService"] = head_service
    job = _job(rayClusterSpec=cluster_spec)
    assert job.spec.ray_cluster_spec is not None
    service = rayjob_head_service_manifest(
        job,
        "sample-abcde",
        job.spec.ray_cluster_spec,
        workflow_id="rayjob/default/sample",
        cluster_ip_service=cluster_ip_service,
    )
    assert service["metadata"]["name"] == "sample-head-svc"
    assert service["metadata"]["labels"]["ray.io/originated-from-cr-name"] == "sample"
    assert service["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"
    assert service["metadata"]["annotations"]["raypilot.io/workflow-id"] == "rayjob/default/sample"
    assert service["spec"]["selector"] == {"ray.io/cluster": "sample-abcde", "ray.io/node-type": "head"}
    assert [port["name"] for port in service["spec"]["ports"]] == [
        "client",
        "dashboard",
        "gcs-server",
        "metrics",
    ]
    assert service["spec"].get("clusterIP") == expected_cluster_ip


@pytest.mark.parametrize(
    ("change", "spec_changed"),
    [({}, False), ({"suspend": True, "shutdownAfterJobFinishes": True}, True), ({"jobId": "mine"}, True)],
)
def test_apply_keeps_the_status_and_bumps_generation_only_on_spec_change(
    change: dict[str, Any], spec_changed: bool
) -> None:
    current = _job().model_copy(update={"status": RayJobStatus(job_id="kept")})
    manifest = rayjob_manifest(**change)
    manifest["metadata"]["labels"] = {"team": "a"}
    manifest["spec"]["entrypoint"] = current.spec.entrypoint
    applied = parse_rayjob(manifest)
    assert is_spec_changed(current, applied) is spec_changed
    after = applied_job(current, applied)
    assert after.status.job_id == "kept"
    assert after.metadata.labels == {"team": "a"}
    assert after.spec == applied.spec


@pytest.mark.parametrize(
    ("failures", "expected"),
    [(0, 10), (1, 10), (2, 20), (3, 40), (5, 160), (6, 300), (50, 300)],
)
def test_failure_backoff(failures: int, expected: int) -> None:
    assert failure_backoff(failures) == timedelta(seconds=expected)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (RayJobStatus(), "**New**"),
        (
            RayJobStatus(
                job_deployment_status=JobDeploymentStatus.RUNNING,
                job_status=JobStatus.RUNNING,
                job_id="j",
                ray_cluster_name="c",
            ),
            "**Running** · job status RUNNING · job id `j` · cluster `c`",
        ),
        (
            RayJobStatus(
                job_deployment_status=JobDeploymentStatus.FAILED, reason=JobFailedReason.DEADLINE_EXCEEDED
            ),
            "**Failed** · reason DeadlineExceeded",
        ),
    ],
)
def test_phase_details(status: RayJobStatus, expected: str) -> None:
    assert phase_details(status) == expected
