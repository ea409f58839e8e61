"""Each RayJob submission mode end to end: the real worker and activities on the real stack (`kube_stack`),
with simulated Ray.

What is checked is what a user sees: the workflow's result and status, the Kubernetes objects (RayCluster,
submitter Job, head Service) and the Events on the RayJob, and the Ray job in the dashboard.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import Any

import pytest

from sandbox.testing import raycluster_manifest
from tests.integration.rayjob_support import (
    OUTLASTS_THE_HEADS_READINESS_DELAY,
    assert_deleted_when_due,
    create_raycluster,
    example,
    first_raycluster_deletion,
    head_service,
    history_length,
    normal_event,
    parse_time,
    ray_job,
    rayclusters,
    rayjob_events,
    reasons,
    submit_ray_job,
)
from tests.integration.stack import Stack

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(180)]

# The cost bounds for a happy path, whatever the job's duration.
MAX_HTTP_MODE_EVENTS = 60
MAX_K8S_JOB_MODE_EVENTS = 80


def _running(status: dict[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") == "Running" and status.get("jobStatus") == "RUNNING"


async def test_http_mode_completes_with_kuberay_events(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    handle = await kube_stack.start(example("rayjob-httpmode", namespace, entrypoint="echo hello"))
    result = await handle.result()

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert result["succeeded"] == 1
    assert result.get("failed", 0) == 0
    assert parse_time(result["rayJobInfo"]["startTime"]) <= parse_time(result["rayJobInfo"]["endTime"])
    cluster = result["rayClusterName"]
    assert cluster.startswith("rayjob-httpmode-")
    assert not kube_stack.exists("jobs", namespace, "rayjob-httpmode"), "HTTPMode has no submitter"
    events = rayjob_events(kube_stack, namespace, "rayjob-httpmode")
    assert normal_event("CreatedRayCluster", f"Created RayCluster {namespace}/{cluster}") in events
    assert "CreatedRayJobSubmitter" not in reasons(events)
    assert await history_length(handle) <= MAX_HTTP_MODE_EVENTS


async def test_k8s_job_mode_runs_kuberays_submitter(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    handle = await kube_stack.start(example("rayjob-k8sjobmode", namespace))
    status = await kube_stack.wait_status(
        handle, lambda s: kube_stack.exists("jobs", namespace, "rayjob-k8sjobmode"), what="submitter Job"
    )
    submitter = kube_stack.batch.read_namespaced_job("rayjob-k8sjobmode", namespace)
    container = submitter.spec.template.spec.containers[0]
    job_id, address = status["jobId"], f"http://{status['dashboardURL']}"
    assert container.command == ["/bin/bash", "-ce", "--"]
    script = container.args[0]
    assert script.startswith("until ")
    assert f"{address}/api/gcs_healthz" in script
    entrypoint = example("rayjob-k8sjobmode", namespace)["spec"]["entrypoint"]
    # KubeRay quotes the JSON options with Go's %q, which for ASCII is what json.dumps does to a string.
    runtime_env = json.dumps('{"env_vars":{"GREETING":"hello from raypilot"}}')
    metadata = json.dumps('{"team":"examples"}')
    expected_tail = (
        f"done ; if ! ray job status --address {address} {job_id} >/dev/null 2>&1 ; then "
        f"ray job submit --address {address} --no-wait --runtime-env-json {runtime_env} "
        f"--metadata-json {metadata} --submission-id {job_id} "
        f"--entrypoint-num-cpus 0.500000 -- {entrypoint} ; fi ; "
        f"ray job logs --address {address} --follow {job_id}"
    )
    assert script.endswith(expected_tail), script
    env = {variable.name: variable.value for variable in container.env}
    assert env["RAY_DASHBOARD_ADDRESS"] == status["dashboardURL"]
    assert env["RAY_JOB_SUBMISSION_ID"] == job_id
    assert env["PYTHONUNBUFFERED"] == "1"
    assert submitter.spec.backoff_limit == 2

    result = await handle.result()
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    finished = kube_stack.batch.read_namespaced_job("rayjob-k8sjobmode", namespace)
    assert finished.status.succeeded == 1, "the submitter itself ran `ray job submit` and followed the logs"
    events = rayjob_events(kube_stack, namespace, "rayjob-k8sjobmode")
    assert {"CreatedRayCluster", "CreatedRayJobSubmitter"} <= set(reasons(events)), events
    assert (
        normal_event("CreatedRayJobSubmitter", f"Created Kubernetes Job {namespace}/rayjob-k8sjobmode")
        in events
    )
    assert await history_length(handle) <= MAX_K8S_JOB_MODE_EVENTS


async def test_sidecar_mode_runs_the_submitter_container_in_the_head_pod(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    entrypoint = OUTLASTS_THE_HEADS_READINESS_DELAY.format(code=0)
    handle = await kube_stack.start(example("rayjob-sidecarmode", namespace, entrypoint=entrypoint))
    status = await kube_stack.wait_status(handle, lambda s: s.get("jobDeploymentStatus") == "Running")
    cluster = kube_stack.custom.get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", status["rayClusterName"]
    )
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    head_spec = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert head_spec["restartPolicy"] == "Never"
    sidecar = next(c for c in head_spec["containers"] if c["name"] == "ray-job-submitter")
    assert f"--submission-id {status['jobId']}" in sidecar["args"][0]
    assert "--address http://127.0.0.1:8265" in sidecar["args"][0]

    # Nothing is played: the sandbox runs the container, whose `ray job submit` reaches the head's dashboard.
    result = await handle.result()
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    submitter = _submitter_status(kube_stack, namespace, status["rayClusterName"])
    terminated = submitter["state"]["terminated"]
    assert (terminated["exitCode"], submitter["restartCount"]) == (0, 0), submitter
    assert parse_time(result["rayJobInfo"]["endTime"]) <= parse_time(terminated["finishedAt"]) + 1
    details = await ray_job(kube_stack, namespace, head_service(result), result["jobId"])
    assert details["status"] == "SUCCEEDED", details
    # The same words: `ray job submit` quotes them again its own way.
    assert shlex.split(details["entrypoint"]) == shlex.split(entrypoint), details
    assert not kube_stack.exists("jobs", namespace, "rayjob-sidecarmode")


async def test_sidecar_mode_failing_entrypoint_fails(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    entrypoint = OUTLASTS_THE_HEADS_READINESS_DELAY.format(code=1)
    handle = await kube_stack.start(example("rayjob-sidecarmode", namespace, entrypoint=entrypoint))
    result = await handle.result()

    assert result["jobDeploymentStatus"] == "Failed", result
    # `ray job submit` exits 1 once the Ray job failed; whichever of the two the workflow observes first
    # decides the reason, as in KubeRay (which checks the submitter before the job's status).
    assert result["reason"] in ("AppFailed", "SubmissionFailed"), result
    submitter = _submitter_status(kube_stack, namespace, result["rayClusterName"])
    assert submitter["state"]["terminated"]["exitCode"] == 1, submitter
    details = await ray_job(kube_stack, namespace, head_service(result), result["jobId"])
    assert details["status"] == "FAILED", details


def _submitter_status(stack: Stack, namespace: str, cluster: str) -> dict[str, Any]:
    pods = stack.core.list_namespaced_pod(
        namespace, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head"
    ).items
    assert len(pods) == 1
    body = stack.api_client.sanitize_for_serialization(pods[0])
    statuses = body["status"]["containerStatuses"]
    return dict(next(s for s in statuses if s["name"] == "ray-job-submitter"))


async def test_interactive_mode_waits_for_the_users_job_id(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    manifest = example("rayjob-interactivemode", namespace)
    handle = await kube_stack.start(manifest)
    status = await kube_stack.wait_status(handle, lambda s: s.get("jobDeploymentStatus") == "Waiting")
    assert not status.get("jobId")

    await submit_ray_job(kube_stack, namespace, head_service(status), "my-notebook-job", "sleep 0.5")
    manifest["spec"]["jobId"] = "my-notebook-job"
    assert (await handle.execute_update("apply", manifest))["generation"] >= 1
    result = await handle.result()
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert result["jobId"] == "my-notebook-job"


async def test_cluster_selector_uses_the_cluster_and_leaves_it_alone(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    shared = await create_raycluster(kube_stack, raycluster_manifest("shared-cluster", namespace))
    handle = await kube_stack.start(example("rayjob-clusterselector", namespace, entrypoint="echo hi"))
    result = await handle.result()

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert result["rayClusterName"] == "shared-cluster"
    after = kube_stack.custom.get_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", "shared-cluster"
    )
    assert after["metadata"]["generation"] == shared["metadata"]["generation"]
    assert after["spec"] == shared["spec"], "the selected cluster's spec was changed"
    assert [c["metadata"]["name"] for c in rayclusters(kube_stack, namespace)] == ["shared-cluster"]
    assert "CreatedRayCluster" not in reasons(rayjob_events(kube_stack, namespace, "rayjob-clusterselector"))
    details = await ray_job(kube_stack, namespace, head_service(result), result["jobId"])
    assert details["status"] == "SUCCEEDED"


async def test_failing_entrypoint_fails_with_app_failed(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    handle = await kube_stack.start(example("rayjob-httpmode", namespace, entrypoint="echo boom; exit 1"))
    result = await handle.result()

    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Failed", "FAILED"), result
    assert result["reason"] == "AppFailed"
    assert result["message"].startswith("Job entrypoint command failed with exit code 1"), result["message"]
    assert result["failed"] == 1
    assert result.get("succeeded", 0) == 0


async def test_created_suspended_creates_no_cluster(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    handle = await kube_stack.start(
        example("rayjob-k8sjobmode", namespace, suspend=True, shutdownAfterJobFinishes=True)
    )
    await kube_stack.wait_status(handle, lambda s: s.get("jobDeploymentStatus") == "Suspended")
    assert rayclusters(kube_stack, namespace) == []
    assert not kube_stack.exists("jobs", namespace, "rayjob-k8sjobmode")
    assert rayjob_events(kube_stack, namespace, "rayjob-k8sjobmode") == []
    await handle.execute_update("delete")
    await handle.result()


async def test_delete_stops_the_ray_job_and_deletes_owned_objects(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    # A shared cluster keeps the dashboard reachable after the delete, to see the Ray job stopped there.
    await create_raycluster(kube_stack, raycluster_manifest("shared-cluster", namespace))
    selector = await kube_stack.start(
        example("rayjob-clusterselector", namespace, entrypoint="sleep 60", submissionMode="K8sJobMode")
    )
    own = await kube_stack.start(example("rayjob-httpmode", namespace, entrypoint="sleep 60"))
    selector_status = await kube_stack.wait_status(selector, _running, within=60)
    own_status = await kube_stack.wait_status(own, _running, within=60)
    assert kube_stack.exists("jobs", namespace, "rayjob-clusterselector")
    own_cluster = own_status["rayClusterName"]
    assert kube_stack.exists("rayclusters", namespace, own_cluster)

    await selector.execute_update("delete")
    await own.execute_update("delete")
    await selector.result()
    await own.result()

    service = head_service(selector_status)
    details = await ray_job(kube_stack, namespace, service, selector_status["jobId"])
    assert details["status"] == "STOPPED", details
    assert not kube_stack.exists("jobs", namespace, "rayjob-clusterselector")
    assert kube_stack.exists("rayclusters", namespace, "shared-cluster"), (
        "a selected cluster is never deleted"
    )
    assert not kube_stack.exists("rayclusters", namespace, own_cluster)
    assert not kube_stack.exists("services", namespace, "rayjob-httpmode-head-svc")


async def test_delete_cluster_rule_fires_at_end_time_plus_ttl(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    ttl = 2
    rules = [{"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": ttl}}]
    manifest = example(
        "rayjob-httpmode", namespace, entrypoint="echo hi", deletionStrategy={"deletionRules": rules}
    )
    deletion_seen = asyncio.create_task(
        asyncio.to_thread(first_raycluster_deletion, kube_stack, namespace, within=120)
    )
    handle = await kube_stack.start(manifest)
    deleted_at = await deletion_seen
    result = await handle.result()

    await assert_deleted_when_due(handle, deleted_at, parse_time(result["endTime"]) + ttl)
    cluster = result["rayClusterName"]
    assert not kube_stack.exists("rayclusters", namespace, cluster)
    events = rayjob_events(kube_stack, namespace, "rayjob-httpmode")
    assert normal_event("DeletedRayCluster", f"Deleted cluster {namespace}/{cluster}") in events


async def test_retries_use_a_new_cluster_per_attempt_and_delete_the_old_one(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    handle = await kube_stack.start(example("rayjob-retries", namespace, entrypoint="exit 1", backoffLimit=1))
    first = await kube_stack.wait_status(handle, lambda s: bool(s.get("rayClusterName")))
    result = await handle.result()

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "AppFailed"), result
    assert result["failed"] == 2
    assert result["rayClusterName"] != first["rayClusterName"]
    assert result["jobId"] != first["jobId"]
    names = [c["metadata"]["name"] for c in rayclusters(kube_stack, namespace)]
    assert first["rayClusterName"] not in names, "the first attempt's cluster was not deleted"
    assert reasons(rayjob_events(kube_stack, namespace, "rayjob-retries")).count("CreatedRayCluster") == 2


async def test_active_deadline_fails_the_job_and_its_cluster_goes(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    handle = await kube_stack.start(
        example("rayjob-deadlines", namespace, entrypoint="sleep 600", activeDeadlineSeconds=4)
    )
    result = await handle.result()

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "DeadlineExceeded"), result
    assert result["message"].startswith("The RayJob has passed the activeDeadlineSeconds. StartTime: "), (
        result
    )
    assert result["message"].endswith(". ActiveDeadlineSeconds: 4"), result
    assert rayclusters(kube_stack, namespace) == [], "shutdownAfterJobFinishes deletes the cluster"


async def test_suspend_while_running_then_resume(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    manifest = example("rayjob-httpmode", namespace, entrypoint="sleep 30", shutdownAfterJobFinishes=True)
    handle = await kube_stack.start(manifest)
    running = await kube_stack.wait_status(handle, _running, within=60)

    manifest["spec"]["suspend"] = True
    await handle.execute_update("apply", manifest)
    await kube_stack.wait_status(handle, lambda s: s.get("jobDeploymentStatus") == "Suspended")
    assert rayclusters(kube_stack, namespace) == []

    manifest["spec"]["suspend"] = False
    manifest["spec"]["entrypoint"] = "echo resumed"
    await handle.execute_update("apply", manifest)
    result = await handle.result()
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert result["rayClusterName"] != running["rayClusterName"]


async def test_failed_submitter_job_fails_the_rayjob_with_submission_failed(kube_stack: Stack) -> None:
    namespace = kube_stack.namespace()
    # A user's submitter template with its own command is used as is (KubeRay): this one never submits.
    template = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "submitter", "image": "rayproject/ray:2.60.0", "command": ["sh", "-c", "exit 7"]}
            ],
        }
    }
    manifest = example(
        "rayjob-k8sjobmode",
        namespace,
        entrypoint="echo never",
        submitterPodTemplate=template,
        submitterConfig={"backoffLimit": 0},
    )
    handle = await kube_stack.start(manifest)
    result = await handle.result()

    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "SubmissionFailed"), result
    assert result["message"].startswith("Job submission has failed. Reason: BackoffLimitExceeded."), result
    submitter = kube_stack.batch.read_namespaced_job("rayjob-k8sjobmode", namespace)
    assert submitter.spec.backoff_limit == 0
