"""A view the observer listed before a direct look must not override that look (the flaky "finished RayJob
Failed while its job was RUNNING" with the observer on). On the fake world (time-skipping server): a
K8sJobMode RayJob whose observer delivered its pre-submission list (`not_found`) and then nothing (a starved
worker), while the workflow's own looks saw the job RUNNING and then the submitter finish."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.operator import OperatorConfig
from raypilot.testing.rayjob_scenarios import rayjob_manifest, start
from raypilot.testing.rayjob_world import FakeWorld
from tests.workflows.rayjob.rayjob_support import with_fakes
from wire import names
from wire.dashboard import JobInfoAnswer, RayJobKey
from wire.observer import OBSERVED_SIGNAL, JobWatch, ObservedJob

FakeWorker = Callable[..., AbstractAsyncContextManager[str]]


async def test_a_view_listed_before_a_direct_look_does_not_fail_a_finished_job(
    time_skipping_env: WorkflowEnvironment, fake_worker: FakeWorker
) -> None:
    client = time_skipping_env.client
    world = FakeWorld(config=OperatorConfig(job_observer=True))
    reads: list[str] = []

    @activity.defn(name=names.WATCH_RAY_JOB)
    async def late_observer(request: JobWatch) -> bool:
        # The observer's first list ran before the submitter submitted the job: it delivers not_found, and
        # then nothing more (too busy to list again in time).
        view = ObservedJob(request.submission_id, JobInfoAnswer("not_found"), (1, 1, 1))
        await client.get_workflow_handle(request.workflow_id).signal(OBSERVED_SIGNAL, view)
        return True

    @activity.defn(name=names.GET_JOB_INFO)
    async def get_job_info(key: RayJobKey) -> JobInfoAnswer:
        reads.append(key.submission_id)
        if len(reads) == 1:
            # The hourly look: the job runs; then it ends, and so does its submitter (at the server's time).
            ended = (await time_skipping_env.get_current_time()).strftime("%Y-%m-%dT%H:%M:%SZ")
            for submitter in world.jobs.values():
                world.finish_submitter(submitter, "Complete")
                submitter["status"]["conditions"][0]["lastTransitionTime"] = ended
            return JobInfoAnswer("found", status="RUNNING", message="Job is currently running.")
        if len(reads) == 2:
            # The look after the submitter finished fails for good: the workflow pauses, its waits restart.
            raise ApplicationError("dashboard answered 403", non_retryable=True)
        return JobInfoAnswer("found", status="SUCCEEDED", message="Job finished successfully.")

    activities = with_fakes(world, late_observer, get_job_info)
    async with fake_worker(client, activities=activities) as queue:
        handle = await start(client, rayjob_manifest(mode="K8sJobMode"), queue)
        result: dict[str, Any] = await handle.result()

    # Before the fix the restarted wait took the held not_found (older than the look that saw RUNNING) and
    # failed the job: "Submitter completed but Ray job not found in RayCluster.", jobStatus RUNNING.
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert result.get("reason", "") == ""
    # Looks: the hourly check's, the one after the submitter finished (failed), and the one before the
    # submitter-finished rule applies (30 s after the submitter ended).
    assert len(reads) == 3
