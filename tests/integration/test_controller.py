"""`raypilot controller` on the real stack as its ServiceAccount (deploy/controller's RBAC), driven through
kubectl only: apply -> workflow -> status in `kubectl get`; delete -> finalizer -> the workflow's `delete`
-> everything owned gone; a bad spec -> ValidationFailed and a Warning Event, nothing created; status
writes on changes of what `kubectl get` shows only (counted, JOB STATUS within Running included); a
DeleteSelf rule deleting its object; KubeRay's leftovers of RayJobs adopted (a running Ray job continued
through a controller restart, an ended one's deletion rule applied, no second run); KubeRay's leftovers of
a RayService adopted under load (kept when the spec matches, then upgraded by a changed spec; upgraded at
once when it does not); a changed spec applied by a controller started again mid-lifecycle, with no second
run or cluster; the controller's role. A killed leader and two replicas: test_controller_process.py."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes import config
from temporalio.client import WorkflowExecutionStatus

from models.features import FeatureGates
from raypilot.controller.decide import Action
from raypilot.controller.kube import ControllerKube
from raypilot.controller.lease import LeaderLease
from raypilot.controller.loop import Controller
from raypilot.controller.temporal_io import ControllerTemporal
from raypilot.load import SteadyLoad
from sandbox.testing import ConditionTimeout, wait_until
from tests.docs.test_rbac import Permission, permission_of, role_permissions
from tests.integration.rayjob_support import example
from tests.integration.rayservice_helpers import (
    KUBERAY_MADE,
    active_cluster,
    head_alone,
    is_running,
    rayservice,
    wait_for_status,
)
from tests.integration.stack import Stack
from tests.kubectl import KUBECTL, kubectl
from tests.kubes import RealKube
from tests.workflows.history_digest import history_digest
from workflows.decisions.rayservice.drain import DEFAULT_MAX_DRAIN

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
ROOT = Path(__file__).resolve().parents[2]
STATUS_INTERVAL = 0.3
EVIDENCE_QUERY_TIMEOUT = timedelta(seconds=10)


@pytest.fixture(scope="module")
def kube_env(
    real_kube_of_simulated_ray: RealKube, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, str]:
    """kubectl as the real stack's admin (deploy/'s CRDs are installed with the stack)."""
    # kubectl keeps its discovery cache under HOME: a directory of the test's own.
    home = tmp_path_factory.mktemp("home")
    return {"KUBECONFIG": str(real_kube_of_simulated_ray.admin), "PATH": "/usr/bin:/bin", "HOME": str(home)}


@pytest.fixture(scope="module")
def controller_kubeconfig(real_kube_of_simulated_ray: RealKube) -> Path:
    """`raypilot controller`'s ServiceAccount (deploy/controller's RBAC, enforced by the API server)."""
    return real_kube_of_simulated_ray.installed.controller


# Every API request the controller made in this module, as RBAC names it (compared with its role at the end).
USED: set[Permission] = set()


def recording(api_client: k8s.ApiClient) -> k8s.ApiClient:
    rest = api_client.rest_client
    request = rest.request

    def record(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        parsed = urlparse(url)
        watch = parse_qs(parsed.query).get("watch", [""])[0].lower() in ("true", "1")
        USED.add(permission_of(method, parsed.path, watch=watch))
        return request(method, url, *args, **kwargs)

    rest.request = record
    return api_client


@contextlib.asynccontextmanager
async def running_controller(stack: Stack, kubeconfig: Path) -> AsyncIterator[Controller]:
    api_client = recording(config.new_client_from_config(config_file=str(kubeconfig)))
    temporal = ControllerTemporal(stack.client, stack.task_queue)
    controller = Controller(ControllerKube(api_client), temporal, FeatureGates(), STATUS_INTERVAL)
    controller.leftover_recheck_seconds = 0.5
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        yield controller
    finally:
        stop.set()
        await task
        api_client.close()


def record_status_writes(controller: Controller) -> list[tuple[Any, ...]]:
    """The (deployment status, job status, cluster, start, end) of every status write of the controller."""
    written: list[tuple[Any, ...]] = []
    patch_status = controller.kube.patch_status

    def recorded(obj: dict[str, Any], patch: dict[str, Any]) -> None:
        status = patch["status"]
        columns = ("jobDeploymentStatus", "jobStatus", "rayClusterName", "startTime", "endTime")
        written.append(tuple(status.get(column) for column in columns))
        patch_status(obj, patch)

    controller.kube.patch_status = recorded  # type: ignore[method-assign]
    return written


def rows(env: dict[str, str], namespace: str) -> list[tuple[str, str]]:
    """(JOB STATUS, DEPLOYMENT STATUS) of each row `kubectl get rayjobs.raypilot.io` prints."""
    table = kubectl(env, "get", "rayjobs.raypilot.io", "-n", namespace, "--no-headers")
    return [(line.split()[1], line.split()[2]) for line in table.splitlines() if len(line.split()) > 2]


def raypilot_rayjob(namespace: str, name: str, entrypoint: str, **spec: Any) -> str:
    manifest = example("rayjob-httpmode", namespace, rename=name, entrypoint=entrypoint, **spec)
    manifest["apiVersion"] = "raypilot.io/v1"  # the only change a KubeRay manifest needs
    return yaml.safe_dump(manifest)


def get_object(env: dict[str, str], namespace: str, name: str) -> dict[str, Any] | None:
    out = kubectl(env, "get", "rayjobs.raypilot.io", name, "-n", namespace, "-o", "json", check=False)
    try:
        loaded: dict[str, Any] = json.loads(out)
    except json.JSONDecodeError:
        return None
    return loaded


async def wait_phase(
    env: dict[str, str],
    namespace: str,
    name: str,
    phase: str,
    within: float = 60,
    stack: Stack | None = None,
) -> dict[str, Any]:
    """The object once its status shows `phase`; on a timeout, with `stack`, the failure says what the
    object's status and its workflow's runs were then (which side of the write-back was behind)."""

    def probe() -> dict[str, Any] | None:
        obj = get_object(env, namespace, name)
        return obj if obj and (obj.get("status") or {}).get("jobDeploymentStatus") == phase else None

    try:
        return await wait_until(probe, within=within, interval=0.2, what=f"{name} {phase}")
    except ConditionTimeout as timeout:
        if stack is None:
            raise
        raise ConditionTimeout(f"{timeout}; {await phase_evidence(stack, env, namespace, name)}") from None


async def phase_evidence(stack: Stack, env: dict[str, str], namespace: str, name: str) -> str:
    """The object's status and each run of its workflow (status, and the `status` query where it answers);
    the newest run's history in brief (what it saw and did)."""
    obj = get_object(env, namespace, name) or {}
    runs = []
    digest: list[str] = []
    for run in await runs_of(stack, f"rayjob/{namespace}/{name}"):
        handle = stack.client.get_workflow_handle(run.id, run_id=run.run_id)
        try:
            # Bounded: a closed run's query waits for a worker to replay it, and the evidence must not
            # outlast the test's own timeout.
            queried: Any = await handle.query("status", rpc_timeout=EVIDENCE_QUERY_TIMEOUT)
        except Exception as error:  # a run that cannot answer says why
            queried = f"query failed: {error}"
        runs.append(f"run {run.run_id} {run.status}: {queried}")
        if not digest:  # the list is newest first
            digest = await history_digest(handle)
    history = "\n".join(digest)
    return f"object status {obj.get('status')!r}; runs: {runs}; the newest run's history:\n{history}"


def rayclusters(env: dict[str, str], namespace: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(
        kubectl(env, "get", "rayclusters.ray.io", "-n", namespace, "-o", "json")
    )["items"]
    return items


async def runs_of(stack: Stack, workflow_id: str) -> list[Any]:
    return [run async for run in stack.client.list_workflows(f"WorkflowId = '{workflow_id}'")]


async def test_apply_runs_the_workflow_status_shows_in_kubectl_and_delete_collects_everything(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    namespace = kube_stack.namespace()
    async with running_controller(kube_stack, controller_kubeconfig) as controller:
        written = record_status_writes(controller)
        # The job runs long enough for its RUNNING to be seen on a loaded machine (with a 3 s job, a full run
        # whose workflow tasks took over 5 s went from PENDING to SUCCEEDED).
        kubectl(kube_env, "apply", "-f", "-", stdin=raypilot_rayjob(namespace, "job", "sleep 8"))
        # JOB STATUS changes within the Running phase, and kubectl shows it (the jobStatus memo).
        await wait_until(
            lambda: ("RUNNING", "Running") in rows(kube_env, namespace), within=30, what="RUNNING in Running"
        )
        done = await wait_phase(kube_env, namespace, "job", "Complete")
        assert done["status"]["jobStatus"] == "SUCCEEDED"
        assert done["metadata"]["finalizers"] == ["raypilot.io/finalizer"]
        table = kubectl(kube_env, "get", "rayjobs.raypilot.io", "-n", namespace)
        assert "SUCCEEDED" in table
        assert "Complete" in table
        # What the workflow created is owned by the raypilot.io object; its Events name that object.
        [cluster] = rayclusters(kube_env, namespace)
        [owner] = cluster["metadata"]["ownerReferences"]
        assert (owner["apiVersion"], owner["kind"], owner["uid"]) == (
            "raypilot.io/v1",
            "RayJob",
            done["metadata"]["uid"],
        )
        events = json.loads(kubectl(kube_env, "get", "events", "-n", namespace, "-o", "json"))["items"]
        subjects = {
            (e["involvedObject"].get("apiVersion"), e["involvedObject"].get("uid"))
            for e in events
            if e["involvedObject"].get("kind") == "RayJob"  # KubeRay posts its own, on the RayCluster
        }
        assert subjects == {("raypilot.io/v1", done["metadata"]["uid"])}
        # Status writes follow what `kubectl get` shows, not polls: each write changes a printer column
        # (Initializing, Running PENDING/RUNNING, Complete SUCCEEDED: at most 5 for the whole life, fewer
        # when a change falls between two ticks), and none come while nothing changes.
        # The controller counts a write once the call has returned, and `kubectl get` can show the last write
        # before that (ci2, session 22: 3 counted of 4 written): wait for the count, then compare.
        print(f"status writes for the whole RayJob: {written}")  # visible with -s
        await wait_until(
            lambda: controller.status_writes == len(written), within=10, what="every status write counted"
        )
        writes = controller.status_writes
        assert 1 <= writes <= 5
        assert all(before != after for before, after in itertools.pairwise(written))
        assert ("Running", "RUNNING") in [columns[:2] for columns in written]
        assert written[-1][:2] == ("Complete", "SUCCEEDED")
        await asyncio.sleep(STATUS_INTERVAL * 5)
        assert controller.status_writes == writes
        # Delete: the finalizer holds the object until the workflow deleted what it owns.
        await asyncio.to_thread(
            kubectl, kube_env, "delete", "rayjobs.raypilot.io/job", "-n", namespace, "--timeout=60s"
        )
        assert get_object(kube_env, namespace, "job") is None
        await wait_until(lambda: not rayclusters(kube_env, namespace), within=30, what="clusters gone")


async def test_a_bad_spec_gets_validation_failed_and_a_warning_event_and_nothing_is_created(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    namespace = kube_stack.namespace()
    async with running_controller(kube_stack, controller_kubeconfig):
        bad = raypilot_rayjob(
            namespace, "bad", "sleep 1", shutdownAfterJobFinishes=False, ttlSecondsAfterFinished=60
        )
        kubectl(kube_env, "apply", "-f", "-", stdin=bad)
        rejected = await wait_phase(kube_env, namespace, "bad", "ValidationFailed")
        assert rejected["status"]["reason"] == "ValidationFailed"
        message = rejected["status"]["message"]
        assert message == (
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have "
            "TTLSecondsAfterFinished"
        )

        def warnings() -> list[tuple[str, str, str]]:
            events = json.loads(kubectl(kube_env, "get", "events", "-n", namespace, "-o", "json"))["items"]
            return [
                (e["type"], e["reason"], e["message"]) for e in events if e["involvedObject"]["name"] == "bad"
            ]

        # The controller posts the Event right after the status the wait above has seen (and runs in this
        # event loop: kubectl runs in a thread).
        posted = await wait_until(
            lambda: asyncio.to_thread(warnings), within=30, interval=0.5, what="the ValidationFailed Event"
        )
        assert posted == [("Warning", "ValidationFailed", message)]
        assert await runs_of(kube_stack, f"rayjob/{namespace}/bad") == []
        assert rayclusters(kube_env, namespace) == []
        await asyncio.to_thread(
            kubectl, kube_env, "delete", "rayjobs.raypilot.io/bad", "-n", namespace, "--timeout=30s"
        )


async def test_a_changed_spec_is_applied_and_a_restarted_controller_makes_no_second_run(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    namespace = kube_stack.namespace()
    workflow_id = f"rayjob/{namespace}/long"
    # The job outlasts the controller's absence and the next one's start with room to spare (4 s did not,
    # on a loaded machine with the real API server: the run had ended before the change reached it).
    entrypoint = "sleep 12"
    async with running_controller(kube_stack, controller_kubeconfig):
        kubectl(kube_env, "apply", "-f", "-", stdin=raypilot_rayjob(namespace, "long", entrypoint))
        await wait_phase(kube_env, namespace, "long", "Running")
    # The controller is gone mid-lifecycle; the spec changes meanwhile; a new controller takes over.
    kubectl(
        kube_env,
        "apply",
        "-f",
        "-",
        stdin=raypilot_rayjob(namespace, "long", entrypoint, activeDeadlineSeconds=600),
    )
    async with running_controller(kube_stack, controller_kubeconfig):
        try:
            changed = await wait_until(
                lambda: (
                    (o := get_object(kube_env, namespace, "long"))
                    and o["metadata"]["annotations"].get("raypilot.io/applied-generation")
                    == f"{o['metadata']['uid']}/2"
                    and o
                ),
                within=30,
                what="generation 2 applied",
            )
        except ConditionTimeout as timeout:
            obj = get_object(kube_env, namespace, "long") or {}
            evidence = await phase_evidence(kube_stack, kube_env, namespace, "long")
            raise ConditionTimeout(f"{timeout}; metadata {obj.get('metadata')!r}; {evidence}") from None
        assert changed["metadata"]["generation"] == 2
        await wait_phase(kube_env, namespace, "long", "Complete")
        runs = await runs_of(kube_stack, workflow_id)
        assert [run.status for run in runs] == [WorkflowExecutionStatus.COMPLETED]
        assert len(rayclusters(kube_env, namespace)) == 1
        await asyncio.to_thread(
            kubectl, kube_env, "delete", "rayjobs.raypilot.io/long", "-n", namespace, "--timeout=60s"
        )


async def test_a_rayjob_with_a_delete_self_rule_deletes_its_object_through_the_finalizer(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    """DeleteSelf deletes the raypilot.io object itself; the finalizer lets it go once the run is over, and
    the garbage collector takes what it owned: nothing is left."""
    namespace = kube_stack.namespace()
    rules = {
        "deletionRules": [{"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}}]
    }
    async with running_controller(kube_stack, controller_kubeconfig):
        kubectl(
            kube_env,
            "apply",
            "-f",
            "-",
            stdin=raypilot_rayjob(namespace, "selfdel", "sleep 1", deletionStrategy=rules),
        )
        await wait_until(
            lambda: (get_object(kube_env, namespace, "selfdel") or {}).get("metadata", {}).get("uid"),
            within=30,
            what="selfdel created",
        )
        await wait_until(
            lambda: get_object(kube_env, namespace, "selfdel") is None,
            within=60,
            what="selfdel deleted itself",
        )
        runs = await runs_of(kube_stack, f"rayjob/{namespace}/selfdel")
        assert [run.status for run in runs] == [WorkflowExecutionStatus.COMPLETED]
        await wait_until(lambda: not rayclusters(kube_env, namespace), within=30, what="clusters gone")
        jobs = json.loads(kubectl(kube_env, "get", "jobs", "-n", namespace, "-o", "json"))["items"]
        assert jobs == []


KUBERAY_MADE_RAYJOB = {
    "metadata": {
        "labels": {"app.kubernetes.io/created-by": "kuberay-operator"},
        "annotations": {"raypilot.io/workflow-id": None, "raypilot.io/rayjob-uid": None},
    }
}


async def kuberay_rayjob_leftovers(
    stack: Stack, namespace: str, name: str, entrypoint: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What `kubectl delete rayjob.ray.io/NAME --cascade=orphan` leaves of a K8sJobMode RayJob whose Ray job
    was submitted (its RayCluster, submitter Job and head Service, labelled by KubeRay, owned by nobody): its
    ray.io manifest and the status KubeRay had. The Ray job goes on by itself."""
    kuberay = example("rayjob-k8sjobmode", namespace, rename=name, entrypoint=entrypoint)
    # The head alone: what is adopted is the cluster, its submitter and its Ray job, not its workers (a worker
    # Pod is two more processes to start and one more readiness to wait for, before anything is left over).
    kuberay["spec"]["rayClusterSpec"].pop("workerGroupSpecs")
    handle = await stack.start(kuberay)
    status = await stack.wait_status(
        handle,
        lambda s: s.get("jobDeploymentStatus") == "Running" and s.get("jobStatus") in ("PENDING", "RUNNING"),
        what="Ray job submitted",
        within=120,  # a submitter Pod on a loaded 2-core machine
    )
    await handle.terminate("stands for KubeRay's operator")
    cluster = status["rayClusterName"]
    stack.custom.patch_namespaced_custom_object(
        "ray.io", "v1", namespace, "rayclusters", cluster, KUBERAY_MADE_RAYJOB
    )
    stack.batch.patch_namespaced_job(name, namespace, KUBERAY_MADE_RAYJOB)
    stack.core.patch_namespaced_service(f"{name}-head-svc", namespace, KUBERAY_MADE_RAYJOB)
    return kuberay, status


def as_raypilot_io(manifest: dict[str, Any], **spec: Any) -> str:
    moved = {**manifest, "apiVersion": "raypilot.io/v1", "spec": {**manifest["spec"], **spec}}
    return yaml.safe_dump(moved)


def uid_of(env: dict[str, str], namespace: str, resource: str) -> str:
    return str(json.loads(kubectl(env, "get", resource, "-n", namespace, "-o", "json"))["metadata"]["uid"])


def submitter_succeeded(env: dict[str, str], namespace: str, name: str) -> bool:
    job = json.loads(kubectl(env, "get", f"jobs/{name}", "-n", namespace, "-o", "json"))
    return bool((job.get("status") or {}).get("succeeded"))


async def test_orphaned_kuberay_rayjobs_are_adopted_and_their_ray_jobs_continued_with_no_second_run(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    """Two RayJobs KubeRay left at once: `running` (its Ray job still runs) is continued on the same cluster,
    submitter Job and submission id to Complete, through a controller restarted mid-lifecycle, with one
    adopting run and nothing created twice; `ended` (its Ray job ended while nobody watched) is found
    ended, never submitted again, and its deletion rule applies (shutdownAfterJobFinishes: the cluster goes,
    the submitter Job stays for its logs)."""
    namespace = kube_stack.namespace()
    (running_kuberay, before), (ended_kuberay, ended_before) = await asyncio.gather(
        kuberay_rayjob_leftovers(kube_stack, namespace, "running", "sleep 6"),
        kuberay_rayjob_leftovers(kube_stack, namespace, "ended", "sleep 3"),
    )
    cluster = before["rayClusterName"]
    uids = {r: uid_of(kube_env, namespace, r) for r in (f"rayclusters.ray.io/{cluster}", "jobs/running")}
    ended_submitter = uid_of(kube_env, namespace, "jobs/ended")
    await wait_until(
        lambda: submitter_succeeded(kube_env, namespace, "ended"), within=30, what="`ended` ended"
    )
    async with running_controller(kube_stack, controller_kubeconfig):
        kubectl(kube_env, "apply", "-f", "-", stdin=as_raypilot_io(running_kuberay))
        ended = as_raypilot_io(ended_kuberay, shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=0)
        kubectl(kube_env, "apply", "-f", "-", stdin=ended)
        await wait_until(  # adopted and started: its run's status is written back
            lambda: (get_object(kube_env, namespace, "running") or {}).get("status", {}).get("jobId"),
            within=30,
            what="the adopting run's status",
        )
        running = get_object(kube_env, namespace, "running")
        assert running is not None
        assert (running["status"]["rayClusterName"], running["status"]["jobId"]) == (cluster, before["jobId"])
    # The controller is gone mid-lifecycle; a new one takes over the adopted objects.
    async with running_controller(kube_stack, controller_kubeconfig) as controller:
        done = await wait_phase(kube_env, namespace, "ended", "Complete", within=60, stack=kube_stack)
        assert (done["status"]["jobStatus"], done["status"]["jobId"]) == ("SUCCEEDED", ended_before["jobId"])
        await wait_until(
            lambda: [c["metadata"]["name"] for c in rayclusters(kube_env, namespace)] == [cluster],
            within=30,
            what="the ended RayJob's cluster deleted by its rule",
        )
        assert uid_of(kube_env, namespace, "jobs/ended") == ended_submitter
        done = await wait_phase(kube_env, namespace, "running", "Complete", within=60, stack=kube_stack)
        assert (done["status"]["jobStatus"], done["status"]["jobId"]) == ("SUCCEEDED", before["jobId"])
        assert all(a != Action.START_OR_APPLY for k, a in controller.actions if k[2] == "running")
        runs = await runs_of(kube_stack, f"rayjob/{namespace}/running")
        assert [run.status for run in runs] == [
            WorkflowExecutionStatus.COMPLETED,  # the adopting run
            WorkflowExecutionStatus.TERMINATED,  # the stand-in for KubeRay
        ]
        assert [c["metadata"]["name"] for c in rayclusters(kube_env, namespace)] == [cluster]
        assert {r: uid_of(kube_env, namespace, r) for r in uids} == uids
        obj = get_object(kube_env, namespace, "running")
        assert obj is not None
        adopted = json.loads(
            kubectl(kube_env, "get", "rayclusters.ray.io", cluster, "-n", namespace, "-o", "json")
        )["metadata"]
        assert adopted["ownerReferences"][0]["uid"] == obj["metadata"]["uid"]
        assert adopted["annotations"]["raypilot.io/workflow-id"] == f"rayjob/{namespace}/running"
        for name in ("running", "ended"):
            await asyncio.to_thread(
                kubectl, kube_env, "delete", f"rayjobs.raypilot.io/{name}", "-n", namespace, "--timeout=60s"
            )
        await wait_until(lambda: not rayclusters(kube_env, namespace), within=30, what="collected")


async def kuberay_leftovers(stack: Stack, namespace: str, name: str) -> tuple[dict[str, Any], str, str]:
    """What `kubectl delete rayservice.ray.io/NAME --cascade=orphan` leaves (a serving RayCluster and its
    Services, labelled by KubeRay, owned by nobody): its v1 manifest, the serving cluster, the serve IP. The
    clusters are heads alone (`head_alone`): the move is about the cluster and its Services, not workers."""
    kuberay = head_alone(rayservice(namespace, name, "v1"))
    handle = await stack.start(kuberay)
    serving = await wait_for_status(stack, handle, is_running, within=90, what="v1 Running")
    old = active_cluster(serving)
    # Make it look like KubeRay's leftovers: no workflow, KubeRay's labels, no raypilot annotations.
    await handle.terminate("stands for KubeRay's operator")
    stack.custom.patch_namespaced_custom_object("ray.io", "v1", namespace, "rayclusters", old, KUBERAY_MADE)
    for service in (f"{name}-head-svc", f"{name}-serve-svc"):
        stack.core.patch_namespaced_service(service, namespace, KUBERAY_MADE)
    serve = stack.core.read_namespaced_service(f"{name}-serve-svc", namespace).spec
    assert serve is not None
    return kuberay, old, str(serve.cluster_ip)


def running_rayservice(env: dict[str, str], namespace: str, name: str, *, not_on: str = "") -> Any:
    """A probe: the raypilot.io RayService once Running (on a cluster other than `not_on` if given)."""

    def probe() -> dict[str, Any] | None:
        out = kubectl(env, "get", "rayservices.raypilot.io", name, "-n", namespace, "-o", "json")
        obj: dict[str, Any] = json.loads(out)
        status = obj.get("status") or {}
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName", "")
        running = status.get("serviceStatus") == "Running" and not status.get("pendingServiceStatus")
        return obj if running and active and active != not_on else None

    return probe


async def delete_rayservice(stack: Stack, env: dict[str, str], namespace: str, name: str) -> None:
    await asyncio.to_thread(
        kubectl, env, "delete", f"rayservices.raypilot.io/{name}", "-n", namespace, "--timeout=60s"
    )
    # Its deletion goes through the workflow's `delete`; the garbage collector takes the adopted rest.
    runs = await runs_of(stack, f"rayservice/{namespace}/{name}")
    assert runs[0].status == WorkflowExecutionStatus.COMPLETED  # the newest run: the adopting one
    await wait_until(lambda: not rayclusters(env, namespace), within=60, what="clusters gone")


async def test_an_orphaned_kuberay_rayservice_is_adopted_under_load_with_no_failed_request(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    """KubeRay's leftovers are taken over by the same spec as raypilot.io/v1: the cluster is kept (no
    upgrade, no new cluster) and no request fails across the move. A changed spec applied afterwards through
    kubectl reaches the same run (`apply` update): a new cluster takes the traffic, still with no failure."""
    stack = kube_stack
    namespace, name = stack.namespace(), "moved"
    kuberay, old, serve_ip = await kuberay_leftovers(stack, namespace, name)
    moved = {**kuberay, "apiVersion": "raypilot.io/v1"}
    async with SteadyLoad(f"http://{serve_ip}:8000/", concurrency=4, keep_alive=False, pause_s=0.02) as load:
        await load.wait_for_requests(100)
        async with running_controller(stack, controller_kubeconfig):
            await asyncio.to_thread(kubectl, kube_env, "apply", "-f", "-", stdin=yaml.safe_dump(moved))
            probe = running_rayservice(kube_env, namespace, name)
            adopted = await wait_until(probe, within=60, interval=0.3, what="adopted RayService Running")
            await load.wait_for_requests(len(load.samples) + 200)
            assert adopted["status"]["activeServiceStatus"]["rayClusterName"] == old
            assert [c["metadata"]["name"] for c in rayclusters(kube_env, namespace)] == [old]
            [cluster] = rayclusters(kube_env, namespace)
            assert cluster["metadata"]["labels"]["app.kubernetes.io/created-by"] == "raypilot"
            [owner] = cluster["metadata"]["ownerReferences"]
            assert (owner["kind"], owner["uid"]) == ("RayService", adopted["metadata"]["uid"])
            # A spec change through kubectl: the running workflow upgrades (one run, no new one).
            changed = {**head_alone(rayservice(namespace, name, "v2")), "apiVersion": "raypilot.io/v1"}
            await asyncio.to_thread(kubectl, kube_env, "apply", "-f", "-", stdin=yaml.safe_dump(changed))
            probe = running_rayservice(kube_env, namespace, name, not_on=old)
            upgraded = await wait_until(probe, within=60, interval=0.3, what="v2 Running on a new cluster")
            new = upgraded["status"]["activeServiceStatus"]["rayClusterName"]
            await load.wait_for_requests(len(load.samples) + 100)
            await load.stop()
            failures = load.failures
            assert not failures, (
                f"{len(failures)} of {len(load.samples)} requests failed, e.g. {failures[:5]}"
            )
            print(f"adoption + apply: {len(load.samples)} requests, 0 failed, {old} kept, then {new}")
            runs = await runs_of(stack, f"rayservice/{namespace}/{name}")
            # The terminated one stands for KubeRay; the adopting run took the change.
            assert [run.status for run in runs] == [
                WorkflowExecutionStatus.RUNNING,
                WorkflowExecutionStatus.TERMINATED,
            ]
            await delete_rayservice(stack, kube_env, namespace, name)


async def test_orphaned_leftovers_of_another_spec_are_upgraded_on_adoption_with_no_failed_request(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    """Adopting leftovers whose cluster does not match the applied spec starts an upgrade: a new cluster,
    the traffic moves to it, the old one goes after its deletion delay, no request fails."""
    stack = kube_stack
    namespace, name = stack.namespace(), "movedchanged"
    _kuberay, old, serve_ip = await kuberay_leftovers(stack, namespace, name)
    moved = {**head_alone(rayservice(namespace, name, "v2")), "apiVersion": "raypilot.io/v1"}
    async with SteadyLoad(f"http://{serve_ip}:8000/", concurrency=4, keep_alive=False, pause_s=0.02) as load:
        await load.wait_for_requests(100)
        async with running_controller(stack, controller_kubeconfig):
            await asyncio.to_thread(kubectl, kube_env, "apply", "-f", "-", stdin=yaml.safe_dump(moved))
            probe = running_rayservice(kube_env, namespace, name, not_on=old)
            upgraded = await wait_until(probe, within=90, interval=0.3, what="Running on a new cluster")
            new = upgraded["status"]["activeServiceStatus"]["rayClusterName"]
            await wait_until(
                lambda: [c["metadata"]["name"] for c in rayclusters(kube_env, namespace)] == [new],
                within=60 + DEFAULT_MAX_DRAIN.total_seconds(),  # the delay, then the drain (on by default)
                what="the old cluster deleted",
            )
            await load.stop()
            failures = load.failures
            assert not failures, (
                f"{len(failures)} of {len(load.samples)} requests failed, e.g. {failures[:5]}"
            )
            print(f"adoption with an upgrade: {len(load.samples)} requests, 0 failed, {old} -> {new}")
            await delete_rayservice(stack, kube_env, namespace, name)


def test_the_controller_role_allows_every_request_and_nothing_more(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    """deploy/controller's ClusterRole and leader-election Role against the requests of the tests above."""
    if not USED:
        pytest.skip("runs after the controller tests of this module")
    # A namespace of its own, with the leader-election Role bound there as deploy/ binds it in the
    # controller's namespace (no other test's controller holds its Lease).
    namespace = kube_stack.namespace()
    role = ROOT / "deploy" / "controller" / "role-leader-election.yaml"
    kubectl(kube_env, "apply", "--server-side", "-n", namespace, "-f", str(role))
    api_client = recording(config.new_client_from_config(config_file=str(controller_kubeconfig)))
    leader, other = (LeaderLease(api_client, namespace, name, lease_seconds=60) for name in ("a", "b"))
    assert leader.try_acquire_or_renew()  # create
    assert leader.try_acquire_or_renew()  # get, update
    assert not other.try_acquire_or_renew()
    api_client.close()
    granted = role_permissions(ROOT / "deploy" / "controller" / "clusterrole.yaml")
    [role, _binding] = yaml.safe_load_all(
        (ROOT / "deploy" / "controller" / "role-leader-election.yaml").read_text()
    )
    for rule in role["rules"]:
        granted |= {
            Permission(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
        }
    assert USED - granted == set(), "the controller's role lacks what it used"
    assert granted - USED == set(), "the controller's role grants what it never used"


async def test_a_failed_rayjobs_saved_driver_log_reaches_its_object_while_its_workflow_waits(
    kube_stack: Stack, kube_env: dict[str, str], controller_kubeconfig: Path
) -> None:
    """The DriverLogSaved condition comes after the Failed it follows and changes no printer column: the
    run's driver-log memo makes the controller read the status again and write it, long before the run
    closes (its TTL keeps it waiting)."""
    namespace = kube_stack.namespace()
    entrypoint = "echo 'ValueError: the data is bad'; exit 3"
    manifest = raypilot_rayjob(
        namespace, "failing", entrypoint, shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=600
    )
    async with running_controller(kube_stack, controller_kubeconfig):
        kubectl(kube_env, "apply", "-f", "-", stdin=manifest)

        def saved() -> dict[str, Any] | None:
            obj = get_object(kube_env, namespace, "failing") or {}
            conditions = (obj.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "DriverLogSaved"), None)

        condition = await wait_until(saved, within=90, interval=0.2, what="DriverLogSaved on the object")
        assert condition["status"] == "True"
        assert condition["message"].endswith("\nValueError: the data is bad"), condition
        [run] = await runs_of(kube_stack, f"rayjob/{namespace}/failing")
        assert run.status is not None
        assert run.status.name == "RUNNING"  # waiting for its TTL
        await asyncio.to_thread(
            kubectl, kube_env, "delete", "rayjobs.raypilot.io/failing", "-n", namespace, "--timeout=60s"
        )
