"""Ray Dashboard activities against a token-auth RayCluster of simulated Ray on the real stack, reached
through the Kubernetes API server's service proxy (and directly at the head pod's address): Jobs, Serve,
health, and that the Ray token never leaves the activity."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities import errors
from activities.dashboard import DashboardActivities
from activities.driver_log import DriverLogActivities
from activities.observer import ObserverActivities
from activities.registry import ActivityDependencies
from activities.waits import DashboardWaits
from tests.activities.conftest import (
    ActivityKube,
    RecordingEnvironment,
    make_dependencies,
    ready_raycluster,
    versioned_serve_config,
)
from wire.dashboard import (
    DashboardTarget,
    HeadServeHealth,
    JobInfoAnswer,
    JobLogs,
    PutServeConfig,
    RayJobKey,
    SubmitJob,
    WaitRayJob,
    WaitServe,
)
from wire.driver_log import SaveDriverLog
from wire.kubernetes import InvolvedObject, RecordEvent
from wire.observer import (
    OBSERVED_SIGNAL,
    WATCHES_QUERY,
    JobWatch,
    ObservedJob,
    ObserveJobs,
    WatchChanges,
    watch_key,
)

pytestmark = pytest.mark.timeout(60)

SERVE_CONFIG = versioned_serve_config(2)


@dataclass(frozen=True)
class RayHead:
    namespace: str
    target: DashboardTarget
    token: str
    pod_name: str
    pod_ip: str


@pytest.fixture(scope="module")
async def head(cluster: ActivityKube, deps: ActivityDependencies, core_api: client.CoreV1Api) -> RayHead:
    """A ready RayCluster `rc` whose Ray asks for a token, kept in its Secret `rc`."""
    token = secrets.token_hex(16)
    namespace, raycluster = await ready_raycluster(deps, core_api, head_token=token)
    head_status = raycluster["status"]["head"]
    target = DashboardTarget(namespace=namespace, head_service="rc-head-svc", auth_secret="rc")
    return RayHead(namespace, target, token, head_status["podName"], head_status["podIP"])


@pytest.fixture(scope="module")
async def direct_deps(cluster: ActivityKube) -> AsyncIterator[ActivityDependencies]:
    dependencies = make_dependencies(cluster, "direct")
    yield dependencies
    await dependencies.aclose()


async def wait_until_terminal(
    deps: ActivityDependencies, target: DashboardTarget, job: str
) -> list[JobInfoAnswer]:
    """Every answer wait_job returns, from the first until the job is terminal."""
    waits = DashboardWaits(deps)
    answers: list[JobInfoAnswer] = []
    last: JobInfoAnswer | None = None
    async with asyncio.timeout(20):
        while last is None or not last.terminal:
            last = await ActivityEnvironment().run(
                waits.wait_job, WaitRayJob(target, job, last=last, poll_seconds=0.05)
            )
            answers.append(last)
    return answers


async def test_job_lifecycle_through_the_api_server_proxy(
    deps: ActivityDependencies, head: RayHead, core_api: client.CoreV1Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dashboard = DashboardActivities(deps)
    job_id = f"job-{uuid.uuid4().hex[:6]}"
    submit = SubmitJob(head.target, {"entrypoint": "echo hello raypilot", "submission_id": job_id})
    first = await ActivityEnvironment().run(dashboard.submit_job, submit)
    again = await ActivityEnvironment().run(dashboard.submit_job, submit)
    assert (first.submission_id, first.created) == (job_id, True)
    assert (again.submission_id, again.created) == (job_id, False)

    answers = await wait_until_terminal(deps, head.target, job_id)
    statuses = [answer.status for answer in answers]
    assert statuses[-1] == "SUCCEEDED"
    assert len(statuses) == len(set(statuses)), "a wait returned without a change"
    assert answers[-1].end_time_ms >= answers[-1].start_time_ms > 0

    key = RayJobKey(head.target, job_id)
    logs = await ActivityEnvironment().run(
        dashboard.get_job_logs, JobLogs(head.target, job_id, tail_chars=100)
    )
    assert "hello raypilot" in logs
    # Logs after teardown: the log read through the proxy, its Event posted to the API server (no store).
    involved = InvolvedObject(kind="RayJob", name="train", namespace=head.namespace)
    announced = RecordEvent(involved, f"{job_id}-log", "DriverLogSaved", f"Driver log of Ray job {job_id}")
    saved = await ActivityEnvironment().run(
        DriverLogActivities(deps).save_driver_log,
        SaveDriverLog(head.target, job_id, head.namespace, "train", announced),
    )
    assert (saved.found, saved.stored) == (True, "")
    assert saved.tail.rstrip().endswith("hello raypilot")
    event = core_api.read_namespaced_event(f"train.{job_id}-log", head.namespace)
    assert (event.reason, event.message) == ("DriverLogSaved", saved.event_message)
    stopped = await ActivityEnvironment().run(dashboard.stop_job, key)
    assert (stopped.found, stopped.stopped, stopped.status) == (True, False, "SUCCEEDED")
    assert await ActivityEnvironment().run(dashboard.delete_job, key) is True
    assert await ActivityEnvironment().run(dashboard.delete_job, key) is False
    assert (await ActivityEnvironment().run(dashboard.get_job_info, key)).outcome == "not_found"
    gone = await ActivityEnvironment().run(dashboard.stop_job, key)
    assert (gone.found, gone.stopped) == (False, False)

    everything = repr([first, again, answers, logs, saved, stopped]) + caplog.text
    assert head.token not in everything


async def test_submitted_jobs_are_listed_with_their_entrypoint_and_metadata(
    deps: ActivityDependencies, head: RayHead
) -> None:
    """What an adopted HTTPMode RayJob looks for KubeRay's submission in (through the proxy, token auth)."""
    dashboard = DashboardActivities(deps)
    job_id = f"adopted-{uuid.uuid4().hex[:6]}"
    request = {"entrypoint": "echo listed", "submission_id": job_id, "metadata": {"team": "a"}}
    await ActivityEnvironment().run(dashboard.submit_job, SubmitJob(head.target, request))
    listed = await ActivityEnvironment().run(dashboard.list_submitted_jobs, head.target)
    [mine] = [job for job in listed if job.submission_id == job_id]
    assert (mine.entrypoint, mine.metadata) == ("echo listed", {"team": "a"})
    assert mine.status in ("PENDING", "RUNNING", "SUCCEEDED")


async def test_stop_a_running_job_then_it_reports_stopped(deps: ActivityDependencies, head: RayHead) -> None:
    dashboard = DashboardActivities(deps)
    job_id = f"sleepy-{uuid.uuid4().hex[:6]}"
    await ActivityEnvironment().run(
        dashboard.submit_job, SubmitJob(head.target, {"entrypoint": "sleep 30", "submission_id": job_id})
    )
    stopped = await ActivityEnvironment().run(dashboard.stop_job, RayJobKey(head.target, job_id))
    assert (stopped.found, stopped.stopped) == (True, True)
    answers = await wait_until_terminal(deps, head.target, job_id)
    assert answers[-1].status == "STOPPED"


async def test_failed_job_keeps_error_type(deps: ActivityDependencies, head: RayHead) -> None:
    dashboard = DashboardActivities(deps)
    job_id = f"fails-{uuid.uuid4().hex[:6]}"
    await ActivityEnvironment().run(
        dashboard.submit_job, SubmitJob(head.target, {"entrypoint": "exit 3", "submission_id": job_id})
    )
    final = (await wait_until_terminal(deps, head.target, job_id))[-1]
    assert (final.status, final.error_type) == ("FAILED", "JOB_ENTRYPOINT_COMMAND_ERROR")
    assert "exit code 3" in final.message


async def test_direct_access_to_the_head_address(direct_deps: ActivityDependencies, head: RayHead) -> None:
    target = DashboardTarget(
        namespace=head.namespace,
        head_service="rc-head-svc",
        dashboard_url=f"{head.pod_ip}:8265",
        auth_secret="rc",
    )
    dashboard = DashboardActivities(direct_deps)
    job_id = f"direct-{uuid.uuid4().hex[:6]}"
    await ActivityEnvironment().run(
        dashboard.submit_job, SubmitJob(target, {"entrypoint": "true", "submission_id": job_id})
    )
    answer = await ActivityEnvironment().run(dashboard.get_job_info, RayJobKey(target, job_id))
    assert answer.outcome == "found"


async def test_unknown_job_is_not_found(deps: ActivityDependencies, head: RayHead) -> None:
    answer = await ActivityEnvironment().run(
        DashboardActivities(deps).get_job_info, RayJobKey(head.target, "nope")
    )
    assert answer == JobInfoAnswer("not_found")


async def test_wrong_token_is_a_permanent_rejection_without_the_token(
    deps: ActivityDependencies, head: RayHead, core_api: client.CoreV1Api
) -> None:
    wrong = "wrong-token-value-123"
    core_api.create_namespaced_secret(
        head.namespace,
        client.V1Secret(metadata=client.V1ObjectMeta(name="bad"), string_data={"auth_token": wrong}),
    )
    target = DashboardTarget(namespace=head.namespace, head_service="rc-head-svc", auth_secret="bad")
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(DashboardActivities(deps).get_serve_applications, target)
    assert (raised.value.type, raised.value.non_retryable) == (errors.DASHBOARD_REJECTED, True)
    assert "HTTP 403" in raised.value.message
    assert wrong not in raised.value.message


async def test_no_token_is_rejected_and_a_missing_secret_is_retried(
    deps: ActivityDependencies, head: RayHead
) -> None:
    without = DashboardTarget(namespace=head.namespace, head_service="rc-head-svc")
    with pytest.raises(ApplicationError) as unauthorized:
        await ActivityEnvironment().run(DashboardActivities(deps).get_serve_applications, without)
    assert "HTTP 401" in unauthorized.value.message
    missing = DashboardTarget(namespace=head.namespace, head_service="rc-head-svc", auth_secret="absent")
    with pytest.raises(ApplicationError) as no_secret:
        await ActivityEnvironment().run(DashboardActivities(deps).get_serve_applications, missing)
    assert (no_secret.value.type, no_secret.value.non_retryable) == (errors.SECRET_MISSING, False)


async def test_serve_config_runs_and_the_head_serves(deps: ActivityDependencies, head: RayHead) -> None:
    dashboard = DashboardActivities(deps)
    await ActivityEnvironment().run(dashboard.put_serve_config, PutServeConfig(head.target, SERVE_CONFIG))
    waits = DashboardWaits(deps)
    recording = RecordingEnvironment().with_heartbeat_timeout(3.0)
    view: dict[str, Any] | None = None
    async with asyncio.timeout(20):
        while True:
            observation = await recording.env.run(
                waits.wait_serve, WaitServe(head.target, "rc", last_view=view, poll_seconds=0.05)
            )
            view = observation.view
            deployment = (
                (view.get("applications") or {}).get("app1", {}).get("deployments", {}).get("Versioned")
            )
            if (
                view["applications"]["app1"]["status"] == "RUNNING"
                and deployment
                and deployment["running"] == 2
            ):
                break
    assert observation.head_serve_healthy is True
    assert observation.head_pod is not None
    assert observation.head_pod["metadata"]["name"] == head.pod_name
    assert observation.details is not None
    replicas = observation.details["applications"]["app1"]["deployments"]["Versioned"]["replicas"]
    assert sorted(replica["state"] for replica in replicas) == ["RUNNING", "RUNNING"]
    beats = [beat for beat in recording.heartbeats if beat is not None]
    assert beats
    assert all("view" in beat for beat in beats)
    healthy = await ActivityEnvironment().run(
        dashboard.check_serve_health, HeadServeHealth(head.namespace, head.pod_name, head.pod_ip)
    )
    assert healthy is True
    details = await ActivityEnvironment().run(dashboard.get_serve_applications, head.target)
    assert details["applications"]["app1"]["status"] == "RUNNING"


async def test_the_serve_wait_heartbeats_a_third_of_its_timeout_not_each_poll(
    deps: ActivityDependencies, head: RayHead
) -> None:
    """Each heartbeat that reaches Temporal is a billable action and the Serve wait runs for days: it polls
    every `poll_seconds` but heartbeats (the latest view) once per third of its heartbeat timeout."""
    waits = DashboardWaits(deps)
    first = await ActivityEnvironment().run(waits.wait_serve, WaitServe(head.target, "rc", poll_seconds=0.02))
    recording = RecordingEnvironment().with_heartbeat_timeout(1.5)  # a heartbeat every 0.5 s
    polls = 0
    observe = waits._observe_serve

    async def counted(*args: Any) -> Any:
        nonlocal polls
        polls += 1
        return await observe(*args)

    waits._observe_serve = counted  # type: ignore[method-assign]
    unchanged = WaitServe(head.target, "rc", last_view=first.view, poll_seconds=0.01)
    started = asyncio.get_running_loop().time()
    running = asyncio.ensure_future(recording.env.run(waits.wait_serve, unchanged))
    await asyncio.sleep(1.5)
    recording.env.cancel()
    with contextlib.suppress(BaseException):
        await running
    elapsed = asyncio.get_running_loop().time() - started
    beats = [beat for beat in recording.heartbeats if beat is not None]
    # One beat per 0.5 s from the background task (the first before any view) and the first view at once;
    # a beat at each poll would make them at least as many as the polls.
    assert 3 <= len(recording.heartbeats) <= 2 + elapsed / 0.5, recording.heartbeats
    assert polls > len(recording.heartbeats)
    assert all(beat == {"view": first.view} for beat in beats)


async def test_invalid_serve_config_is_rejected(deps: ActivityDependencies, head: RayHead) -> None:
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(
            DashboardActivities(deps).put_serve_config,
            PutServeConfig(head.target, {"applications": [{"name": "x"}]}),
        )
    assert (raised.value.type, raised.value.non_retryable) == (errors.DASHBOARD_REJECTED, True)
    assert raised.value.message.startswith("UpdateDeployments fail: HTTP 400")


async def test_health_of_an_unreachable_head_is_false(deps: ActivityDependencies, head: RayHead) -> None:
    absent = HeadServeHealth(head.namespace, "no-such-pod", "127.0.0.1", 1)
    assert await ActivityEnvironment().run(DashboardActivities(deps).check_serve_health, absent) is False


class _ObserverTemporal:
    """The Temporal side of the job observer, in memory: the observer workflow's `watches` query answers one
    watch, and every signal is recorded (the activity's Kubernetes and dashboard side is the real one)."""

    def __init__(self, watch: JobWatch) -> None:
        self.watch = watch
        self.observed: asyncio.Queue[ObservedJob] = asyncio.Queue()
        self.epoch_ms = 0  # of the observer's current activity (0: not said)
        self.id = "raypilot-observer/q/ns"

    def get_workflow_handle(self, workflow_id: str, **_: Any) -> _ObserverTemporal:
        return self

    async def query(self, name: str, since: int, **_: Any) -> WatchChanges:
        assert name == WATCHES_QUERY
        added = {watch_key(self.watch.target, self.watch.submission_id): self.watch} if since == 0 else {}
        return WatchChanges(1, added, full=since == 0, epoch_ms=self.epoch_ms)

    async def signal(self, name: str, arg: Any = None) -> None:
        if name == OBSERVED_SIGNAL:
            await self.observed.put(arg)


async def test_the_observer_lists_the_dashboard_and_signals_the_waiting_workflow(
    deps: ActivityDependencies, head: RayHead
) -> None:
    dashboard = DashboardActivities(deps)
    job_id = f"job-{uuid.uuid4().hex[:6]}"
    await ActivityEnvironment().run(
        dashboard.submit_job, SubmitJob(head.target, {"entrypoint": "echo observed", "submission_id": job_id})
    )
    temporal = _ObserverTemporal(JobWatch(head.target, job_id, "rayjob/ns/observed"))
    observer = ObserverActivities(dataclasses.replace(deps, temporal_client=temporal))  # type: ignore[arg-type]
    env = ActivityEnvironment()
    running = asyncio.ensure_future(
        env.run(observer.observe_jobs, ObserveJobs(head.namespace, "raypilot-observer/q/ns", 1, 0.05))
    )
    try:
        async with asyncio.timeout(20):
            seen = await temporal.observed.get()
            while not seen.answer.terminal:
                seen = await temporal.observed.get()
    finally:
        env.cancel()
        with contextlib.suppress(BaseException):
            await running
    assert seen.submission_id == job_id
    assert seen.answer.status == "SUCCEEDED"
    assert seen.version[:2] == (1, 1)  # the observer's epoch and attempt, then its list tick


async def _observe_until(
    temporal: _ObserverTemporal, done: Callable[[ObservedJob], bool]
) -> list[ObservedJob]:
    seen: list[ObservedJob] = []
    async with asyncio.timeout(20):
        while not seen or not done(seen[-1]):
            seen.append(await temporal.observed.get())
    return seen


async def test_the_next_activity_of_an_observer_in_the_same_worker_sends_only_what_changed(
    deps: ActivityDependencies, head: RayHead
) -> None:
    """A continue-as-new of the observer starts a new activity; in the worker of the one before, it does not
    send again the views that one delivered (thousands of RayJobs would each run a workflow task for
    nothing, the news queued behind them): its first signal is the job's end."""
    dashboard = DashboardActivities(deps)
    job_id = f"job-{uuid.uuid4().hex[:6]}"
    await ActivityEnvironment().run(
        dashboard.submit_job, SubmitJob(head.target, {"entrypoint": "sleep 4", "submission_id": job_id})
    )
    temporal = _ObserverTemporal(JobWatch(head.target, job_id, "rayjob/ns/continued"))
    temporal.epoch_ms = 1
    observer = ObserverActivities(dataclasses.replace(deps, temporal_client=temporal))  # type: ignore[arg-type]
    before = asyncio.ensure_future(
        ActivityEnvironment().run(
            observer.observe_jobs, ObserveJobs(head.namespace, "observer/q/ns", 1, 0.05)
        )
    )
    first = await _observe_until(temporal, lambda view: view.answer.status == "RUNNING")
    temporal.epoch_ms = 2  # the run continued as new with a new activity: the one before stops
    async with asyncio.timeout(20):
        await before
    env = ActivityEnvironment()
    after = asyncio.ensure_future(
        env.run(observer.observe_jobs, ObserveJobs(head.namespace, "observer/q/ns", 2, 0.05))
    )
    try:
        continued = await _observe_until(temporal, lambda view: view.answer.terminal)
    finally:
        env.cancel()
        with contextlib.suppress(BaseException):
            await after
    assert first[-1].version[0] == 1
    assert [(view.version[0], view.answer.status) for view in continued] == [(2, "SUCCEEDED")]
