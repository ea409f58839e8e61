"""Kubernetes activities against the real API server, through the real activity code: idempotent
creates and deletes, conflict retries, ownership, events, cleanup by labels, and classified errors."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError

from activities import errors
from activities.kubernetes.clusters import RayClusterActivities, ServiceActivities
from activities.kubernetes.event_body import event_name
from activities.kubernetes.events import EventActivities, OwnershipActivities
from activities.kubernetes.workloads import WorkloadActivities
from activities.registry import ActivityDependencies
from tests.activities.conftest import ActivityKube, run_activity, small_raycluster, submitter_body
from wire.kubernetes import (
    CreateObject,
    DeleteObject,
    HeadPodKey,
    InvolvedObject,
    ListObjects,
    ObjectKey,
    OwnedObjects,
    OwnerReference,
    Ownership,
    PodLabels,
    RayResourceKey,
    RecordEvent,
    ServiceEndpoints,
    UpdateSpec,
)

pytestmark = pytest.mark.timeout(60)

OWNER = Ownership(kind="RayService", name="svc", workflow_id="rayservice/ns/svc")


def service_body(name: str, namespace: str, cluster: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "selector": {"ray.io/cluster": cluster, "ray.io/serve": "true"},
            "ports": [{"name": "serve", "port": 8000, "targetPort": 8000}],
        },
    }


def test_create_is_idempotent_and_adds_ownership(deps: ActivityDependencies, namespace: str) -> None:
    activities = RayClusterActivities(deps)
    request = CreateObject(body=small_raycluster("svc-abcde", namespace), ownership=OWNER)
    first = run_activity(activities.create_raycluster, request)
    second = run_activity(activities.create_raycluster, request)
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert first["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "svc",
        "ray.io/originated-from-crd": "RayService",
        "app.kubernetes.io/created-by": "raypilot",
    }
    assert first["metadata"]["annotations"]["raypilot.io/workflow-id"] == "rayservice/ns/svc"
    assert "managedFields" not in first["metadata"]
    assert first["spec"]["workerGroupSpecs"][0]["groupName"] == "workers"


def test_create_survives_an_injected_conflict(
    deps: ActivityDependencies, namespace: str, cluster: ActivityKube
) -> None:
    cluster.set_faults([{"verbs": ["create"], "resources": ["services"], "status": 409, "times": 1}])
    created = run_activity(
        ServiceActivities(deps).create_service, CreateObject(body=service_body("s", namespace, "a"))
    )
    assert created["metadata"]["name"] == "s"
    assert created["spec"]["clusterIP"]


def test_owner_reference_is_added_once(deps: ActivityDependencies, namespace: str) -> None:
    owner = OwnerReference(api_version="ray.io/v1", kind="RayCluster", name="rc", uid="1234")
    body = service_body("rc-serve-svc", namespace, "rc")
    body["metadata"]["ownerReferences"] = [owner.to_json()]
    created = run_activity(ServiceActivities(deps).create_service, CreateObject(body=body, owner=owner))
    assert [ref["uid"] for ref in created["metadata"]["ownerReferences"]] == ["1234"]


def test_delete_is_idempotent(deps: ActivityDependencies, namespace: str) -> None:
    activities = RayClusterActivities(deps)
    run_activity(activities.create_raycluster, CreateObject(body=small_raycluster("gone", namespace)))
    assert run_activity(activities.delete_raycluster, DeleteObject(namespace, "gone")) is True
    assert run_activity(activities.delete_raycluster, DeleteObject(namespace, "gone")) is False
    assert run_activity(activities.get_raycluster, ObjectKey(namespace, "gone")) is None


def test_delete_with_a_stale_uid_spares_the_namesake(deps: ActivityDependencies, namespace: str) -> None:
    activities = ServiceActivities(deps)
    run_activity(activities.create_service, CreateObject(body=service_body("s", namespace, "a")))
    assert run_activity(activities.delete_service, DeleteObject(namespace, "s", uid="not-its-uid")) is False
    assert run_activity(activities.get_service, ObjectKey(namespace, "s")) is not None


def test_update_spec_retries_conflicts_and_keeps_the_cluster_ip(
    deps: ActivityDependencies, namespace: str, cluster: ActivityKube
) -> None:
    activities = ServiceActivities(deps)
    created = run_activity(
        activities.create_service, CreateObject(body=service_body("head-svc", namespace, "old"))
    )
    cluster.set_faults([{"verbs": ["update"], "resources": ["services"], "status": 409, "times": 2}])
    desired = service_body("head-svc", namespace, "new")["spec"]
    updated = run_activity(
        activities.update_service_spec,
        UpdateSpec(namespace, "head-svc", desired, labels={"ray.io/serve": "svc-serve"}),
    )
    assert updated["spec"]["selector"]["ray.io/cluster"] == "new"
    assert updated["spec"]["clusterIP"] == created["spec"]["clusterIP"]
    assert updated["metadata"]["labels"]["ray.io/serve"] == "svc-serve"


def test_update_spec_without_a_change_does_not_write(deps: ActivityDependencies, namespace: str) -> None:
    activities = ServiceActivities(deps)
    created = run_activity(activities.create_service, CreateObject(body=service_body("same", namespace, "a")))
    again = run_activity(activities.update_service_spec, UpdateSpec(namespace, "same", created["spec"]))
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_update_of_a_missing_object_returns_none(deps: ActivityDependencies, namespace: str) -> None:
    assert (
        run_activity(RayClusterActivities(deps).update_raycluster_spec, UpdateSpec(namespace, "nope", {}))
        is None
    )


def test_suspend_worker_groups(deps: ActivityDependencies, namespace: str) -> None:
    activities = RayClusterActivities(deps)
    body = small_raycluster("rc", namespace)
    body["spec"]["workerGroupSpecs"].append({**body["spec"]["workerGroupSpecs"][0], "groupName": "more"})
    run_activity(activities.create_raycluster, CreateObject(body=body))
    suspended = run_activity(activities.suspend_worker_groups, ObjectKey(namespace, "rc"))
    assert [group["suspend"] for group in suspended["spec"]["workerGroupSpecs"]] == [True, True]
    again = run_activity(activities.suspend_worker_groups, ObjectKey(namespace, "rc"))
    # KubeRay writes the status meanwhile; the spec (generation) stays as it was.
    assert again["metadata"]["generation"] == suspended["metadata"]["generation"]
    assert again["spec"] == suspended["spec"]
    assert run_activity(activities.suspend_worker_groups, ObjectKey(namespace, "absent")) is None


def test_list_rayclusters_by_label_without_spec(deps: ActivityDependencies, namespace: str) -> None:
    activities = RayClusterActivities(deps)
    run_activity(activities.create_raycluster, CreateObject(small_raycluster("svc-1", namespace), OWNER))
    run_activity(activities.create_raycluster, CreateObject(small_raycluster("other", namespace)))
    found = run_activity(activities.list_rayclusters, ListObjects(namespace, OWNER.label_selector()))
    assert [item["metadata"]["name"] for item in found] == ["svc-1"]
    assert "spec" not in found[0]


@pytest.mark.parametrize(
    ("rule", "error_type", "non_retryable", "delay_seconds"),
    [
        ({"status": 429, "retryAfterSeconds": 3}, errors.KUBERNETES_THROTTLED, False, 3),
        ({"status": 500}, errors.KUBERNETES_SERVER_ERROR, False, None),
        ({"status": 503}, errors.KUBERNETES_UNAVAILABLE, False, None),
    ],
)
def test_injected_api_errors_are_classified(
    deps: ActivityDependencies,
    namespace: str,
    cluster: ActivityKube,
    rule: dict[str, Any],
    error_type: str,
    non_retryable: bool,
    delay_seconds: int | None,
) -> None:
    cluster.set_faults([{"verbs": ["get"], "resources": ["rayclusters"], **rule}])
    with pytest.raises(ApplicationError) as raised:
        run_activity(RayClusterActivities(deps).get_raycluster, ObjectKey(namespace, "any"))
    assert raised.value.type == error_type
    assert raised.value.non_retryable is non_retryable
    delay = raised.value.next_retry_delay
    assert (delay.total_seconds() if delay else None) == delay_seconds


def test_a_read_is_sent_again_after_a_server_error_and_a_write_is_not(
    deps: ActivityDependencies, namespace: str, cluster: ActivityKube
) -> None:
    """Two 500s on a list are absorbed inside the activity (three answers asked for); a third fails it,
    classified; a create that meets a 500 fails at once (Temporal retries it, the create being idempotent)."""
    activities = RayClusterActivities(deps)
    run_activity(activities.create_raycluster, CreateObject(small_raycluster("svc-1", namespace), OWNER))
    listing = ListObjects(namespace, OWNER.label_selector())
    cluster.set_faults([{"verbs": ["list"], "resources": ["rayclusters"], "status": 500, "times": 2}])
    assert [item["metadata"]["name"] for item in run_activity(activities.list_rayclusters, listing)] == [
        "svc-1"
    ]
    assert cluster.injected() == [2]

    cluster.set_faults([{"verbs": ["list"], "resources": ["rayclusters"], "status": 500, "times": 3}])
    with pytest.raises(ApplicationError) as raised:
        run_activity(activities.list_rayclusters, listing)
    assert raised.value.type == errors.KUBERNETES_SERVER_ERROR

    cluster.set_faults([{"verbs": ["create"], "resources": ["rayclusters"], "status": 500, "times": 2}])
    second = CreateObject(small_raycluster("svc-2", namespace), OWNER)
    with pytest.raises(ApplicationError) as raised:
        run_activity(activities.create_raycluster, second)
    assert raised.value.type == errors.KUBERNETES_SERVER_ERROR
    assert cluster.injected() == [1]


def test_invalid_object_is_a_permanent_error(deps: ActivityDependencies, namespace: str) -> None:
    body = service_body("Not_A_Name", namespace, "a")
    with pytest.raises(ApplicationError) as raised:
        run_activity(ServiceActivities(deps).create_service, CreateObject(body=body))
    assert raised.value.type == errors.KUBERNETES_INVALID
    assert raised.value.non_retryable


def test_record_event_once_per_id(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api
) -> None:
    activities = EventActivities(deps)
    request = RecordEvent(
        involved=InvolvedObject(
            kind="RayJob", name="job", namespace=namespace, uid="u-1", api_version="ray.io/v1"
        ),
        event_id="7",
        reason="CreatedRayCluster",
        message="Created RayCluster job-abcde",
    )
    assert run_activity(activities.record_event, request) == "job.7"
    run_activity(activities.record_event, request)
    events = core_api.list_namespaced_event(namespace).items
    assert [(e.metadata.name, e.reason, e.count, e.source.component) for e in events] == [
        ("job.7", "CreatedRayCluster", 1, "raypilot")
    ]
    assert events[0].involved_object.uid == "u-1"


@pytest.mark.parametrize(
    ("object_name", "event_id", "expected"),
    [("job", "7", "job.7"), ("Job", "A_B", "job.a-b"), ("x", "-", "x")],
)
def test_event_names_are_valid_object_names(object_name: str, event_id: str, expected: str) -> None:
    assert event_name(object_name, event_id) == expected


def test_owned_objects_are_listed_and_deleted_by_labels(deps: ActivityDependencies, namespace: str) -> None:
    services, clusters = ServiceActivities(deps), RayClusterActivities(deps)
    run_activity(services.create_service, CreateObject(service_body("svc-head-svc", namespace, "a"), OWNER))
    run_activity(services.create_service, CreateObject(service_body("svc-serve-svc", namespace, "a"), OWNER))
    run_activity(services.create_service, CreateObject(service_body("unrelated", namespace, "a")))
    run_activity(clusters.create_raycluster, CreateObject(small_raycluster("svc-x", namespace), OWNER))
    ownership = OwnershipActivities(deps)
    request = OwnedObjects(namespace, "RayService", "svc", keep=("svc-head-svc",))
    listed = run_activity(ownership.list_owned_objects, request)
    assert sorted((ref["kind"], ref["name"]) for ref in listed) == [
        ("RayCluster", "svc-x"),
        ("Service", "svc-serve-svc"),
    ]
    deleted = run_activity(ownership.delete_owned_objects, request)
    assert sorted(ref["name"] for ref in deleted) == ["svc-serve-svc", "svc-x"]
    assert run_activity(ownership.list_owned_objects, request) == []
    assert run_activity(services.get_service, ObjectKey(namespace, "unrelated")) is not None
    assert run_activity(services.get_service, ObjectKey(namespace, "svc-head-svc")) is not None


def test_delete_ray_resource_without_one_is_success(deps: ActivityDependencies, namespace: str) -> None:
    assert (
        run_activity(OwnershipActivities(deps).delete_ray_resource, RayResourceKey("RayJob", namespace, "j"))
        is False
    )


def test_count_ready_endpoints_counts_ready_pods_as_kuberay(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api
) -> None:
    """KubeRay's numServeEndpoints: distinct Pods (targetRef.uid) with `ready: true`. A dual-stack Pod is in
    an IPv4 and an IPv6 slice and counts once; an endpoint without `ready` or without a Pod does not count."""
    discovery = client.DiscoveryV1Api(core_api.api_client)

    def endpoint_slice(name: str, family: str, endpoints: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "svc-serve-svc"}},
            "addressType": family,
            "endpoints": endpoints,
        }

    def pod(uid: str) -> dict[str, str]:
        return {"kind": "Pod", "name": f"pod-{uid}", "uid": uid}

    slices = {
        ("v4", "IPv4"): [
            {"addresses": ["10.0.0.1"], "conditions": {"ready": True}, "targetRef": pod("a")},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": False}, "targetRef": pod("b")},
            {"addresses": ["10.0.0.3"], "targetRef": pod("c")},
            {"addresses": ["10.0.0.4"], "conditions": {"ready": True}},
            {"addresses": ["10.0.0.5"], "conditions": {"ready": True}, "targetRef": pod("e")},
        ],
        ("v6", "IPv6"): [
            {"addresses": ["fd00::1"], "conditions": {"ready": True}, "targetRef": pod("a")},
            {"addresses": ["fd00::5"], "conditions": {"ready": True}, "targetRef": pod("e")},
        ],
    }
    for (name, family), endpoints in slices.items():
        discovery.create_namespaced_endpoint_slice(namespace, endpoint_slice(name, family, endpoints))
    count = run_activity(
        ServiceActivities(deps).count_ready_endpoints, ServiceEndpoints(namespace, "svc-serve-svc")
    )
    assert count == 2


def test_an_earlier_runs_submitter_job_is_deleted_not_adopted(
    deps: ActivityDependencies, namespace: str
) -> None:
    activities = WorkloadActivities(deps)
    first_run = Ownership("RayJob", "job", "rayjob/ns/job", rayjob_uid="run-1")
    second_run = Ownership("RayJob", "job", "rayjob/ns/job", rayjob_uid="run-2")
    earlier = run_activity(activities.create_job, CreateObject(submitter_body("job", namespace), first_run))
    assert earlier["metadata"]["annotations"]["raypilot.io/rayjob-uid"] == "run-1"
    # A retried create of the same run adopts its own Job.
    again = run_activity(activities.create_job, CreateObject(submitter_body("job", namespace), first_run))
    assert again["metadata"]["uid"] == earlier["metadata"]["uid"]

    with pytest.raises(ApplicationError) as raised:
        run_activity(activities.create_job, CreateObject(submitter_body("job", namespace), second_run))
    assert raised.value.type == errors.LEFTOVER_OF_EARLIER_RUN
    assert not raised.value.non_retryable
    assert "leftover" in str(raised.value)
    # The retry (the leftover gone) creates the later run's own Job.
    fresh = run_activity(activities.create_job, CreateObject(submitter_body("job", namespace), second_run))
    assert fresh["metadata"]["uid"] != earlier["metadata"]["uid"]
    assert fresh["metadata"]["annotations"]["raypilot.io/rayjob-uid"] == "run-2"


def test_job_create_get_delete(deps: ActivityDependencies, namespace: str) -> None:
    activities = WorkloadActivities(deps)
    body = submitter_body("job", namespace)
    created = run_activity(activities.create_job, CreateObject(body=body, ownership=OWNER))
    assert "template" not in created["spec"]
    assert created["spec"]["backoffLimit"] == 0
    assert (
        run_activity(activities.get_job, ObjectKey(namespace, "job"))["metadata"]["uid"]
        == created["metadata"]["uid"]
    )
    assert run_activity(activities.delete_job, DeleteObject(namespace, "job")) is True
    assert run_activity(activities.delete_job, DeleteObject(namespace, "job")) is False


def test_head_pod_lookup_and_labels(
    deps: ActivityDependencies, namespace: str, core_api: client.CoreV1Api
) -> None:
    def pod(name: str, node_type: str) -> client.V1Pod:
        return client.V1Pod(
            metadata=client.V1ObjectMeta(
                name=name, labels={"ray.io/cluster": "rc", "ray.io/node-type": node_type}
            ),
            spec=client.V1PodSpec(containers=[client.V1Container(name="ray-head", image="x")]),
        )

    core_api.create_namespaced_pod(namespace, pod("rc-head", "head"))
    core_api.create_namespaced_pod(namespace, pod("rc-worker", "worker"))
    activities = WorkloadActivities(deps)
    head = run_activity(activities.get_head_pod, HeadPodKey(namespace, "rc"))
    assert head["metadata"]["name"] == "rc-head"
    assert head["spec"] == {"restartPolicy": "Always", "containers": [{"name": "ray-head"}]}
    labelled = run_activity(
        activities.patch_pod_labels, PodLabels(namespace, "rc-head", {"ray.io/serve": "true"})
    )
    assert labelled["metadata"]["labels"]["ray.io/serve"] == "true"
    unlabelled = run_activity(
        activities.patch_pod_labels, PodLabels(namespace, "rc-head", {"ray.io/serve": None})
    )
    assert "ray.io/serve" not in unlabelled["metadata"]["labels"]
    assert run_activity(activities.get_head_pod, HeadPodKey(namespace, "other")) is None
    assert run_activity(activities.patch_pod_labels, PodLabels(namespace, "missing", {"a": "b"})) is None
