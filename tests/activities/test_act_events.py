"""An act's Kubernetes Event posted by the act's own activity (`event` on CreateObject / DeleteObject),
against the real API server: once per act whatever its retries, only when the act succeeded, and never
failing the act when the Event cannot be posted."""

from __future__ import annotations

import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError

from activities.kubernetes.clusters import RayClusterActivities, ServiceActivities
from activities.registry import ActivityDependencies
from tests.activities.conftest import ActivityKube, run_activity, small_raycluster
from wire.kubernetes import CreateObject, DeleteObject, InvolvedObject, Ownership, RecordEvent

pytestmark = pytest.mark.timeout(60)

OWNER = Ownership(kind="RayJob", name="job", workflow_id="rayjob/ns/job", rayjob_uid="run-1")


def act_event(namespace: str, sequence: int, reason: str, message: str) -> RecordEvent:
    involved = InvolvedObject(kind="RayJob", name="job", namespace=namespace, api_version="ray.io/v1")
    return RecordEvent(involved=involved, event_id=f"run-1-{sequence}", reason=reason, message=message)


def events_of(core_api: client.CoreV1Api, namespace: str) -> list[tuple[str, str, str]]:
    """The Events about the RayJob `job` (KubeRay posts its own about the RayClusters it reconciles)."""
    events = core_api.list_namespaced_event(namespace).items
    return sorted(
        (event.metadata.name, event.reason, event.message)
        for event in events
        if (event.involved_object.kind, event.involved_object.name) == ("RayJob", "job")
    )


def test_a_create_posts_its_event_once_however_often_it_runs(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api
) -> None:
    event = act_event(namespace, 1, "CreatedRayCluster", "Created RayCluster job-abcde")
    request = CreateObject(small_raycluster("job-abcde", namespace), OWNER, event=event)
    first = run_activity(RayClusterActivities(deps).create_raycluster, request)
    # A retried act (its first attempt's result lost) finds the cluster and the Event of the first attempt.
    again = run_activity(RayClusterActivities(deps).create_raycluster, request)
    assert again["metadata"]["uid"] == first["metadata"]["uid"]
    assert events_of(core_api, namespace) == [
        ("job.run-1-1", "CreatedRayCluster", "Created RayCluster job-abcde")
    ]


def test_a_delete_posts_its_event_only_when_it_deleted_the_object(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api
) -> None:
    clusters = RayClusterActivities(deps)
    run_activity(clusters.create_raycluster, CreateObject(small_raycluster("job-abcde", namespace)))
    deleted = act_event(namespace, 2, "DeletedRayCluster", "Deleted RayCluster job-abcde")
    assert (
        run_activity(clusters.delete_raycluster, DeleteObject(namespace, "job-abcde", event=deleted)) is True
    )
    gone = act_event(namespace, 3, "DeletedRayCluster", "Deleted RayCluster job-abcde")
    assert run_activity(clusters.delete_raycluster, DeleteObject(namespace, "job-abcde", event=gone)) is False
    assert events_of(core_api, namespace) == [
        ("job.run-1-2", "DeletedRayCluster", "Deleted RayCluster job-abcde")
    ]


def test_a_failed_act_posts_no_event(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api
) -> None:
    body = {"metadata": {"name": "Not_A_Name", "namespace": namespace}, "spec": {"ports": [{"port": 80}]}}
    event = act_event(namespace, 1, "CreatedService", "Created service Not_A_Name")
    with pytest.raises(ApplicationError):
        run_activity(ServiceActivities(deps).create_service, CreateObject(body, event=event))
    assert events_of(core_api, namespace) == []


def test_an_event_that_cannot_be_posted_never_fails_the_act(
    deps: ActivityDependencies,
    namespace: str,
    core_api: client.CoreV1Api,
    cluster: ActivityKube,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster.set_faults([{"verbs": ["create"], "resources": ["events"], "status": 403}])
    body = {"metadata": {"name": "job-head-svc", "namespace": namespace}, "spec": {"ports": [{"port": 80}]}}
    event = act_event(namespace, 1, "CreatedService", "Created service job-head-svc")
    created = run_activity(ServiceActivities(deps).create_service, CreateObject(body, OWNER, event=event))
    assert created["metadata"]["name"] == "job-head-svc"
    assert "could not record event CreatedService" in caplog.text
    cluster.set_faults([])
    assert events_of(core_api, namespace) == []


def test_an_event_the_api_failed_to_take_for_a_moment_is_posted_after_all(
    deps: ActivityDependencies,
    namespace: str,
    core_api: client.CoreV1Api,
    cluster: ActivityKube,
) -> None:
    """A 500 and a 429 on the Event's POST (the reliability suite's faulty API lost an Event this way) are
    tried again within the act's activity; the act is not repeated."""
    cluster.set_faults(
        [
            {"verbs": ["create"], "resources": ["events"], "status": 500, "times": 1},
            {"verbs": ["create"], "resources": ["events"], "status": 429, "retryAfterSeconds": 0, "times": 1},
        ],
    )
    body = {"metadata": {"name": "job-head-svc", "namespace": namespace}, "spec": {"ports": [{"port": 80}]}}
    event = act_event(namespace, 1, "CreatedService", "Created service job-head-svc")
    run_activity(ServiceActivities(deps).create_service, CreateObject(body, OWNER, event=event))
    cluster.set_faults([])
    assert events_of(core_api, namespace) == [
        ("job.run-1-1", "CreatedService", "Created service job-head-svc")
    ]
