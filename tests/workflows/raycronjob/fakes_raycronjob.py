"""A stand-in RayJobWorkflow (same type name) and fake RayCronJob activities, for the tick workflow on the
time-skipping server and the schedules on the dev server, without a cluster.

The fake RayJob does what its manifest's `spec.entrypoint` says: `succeed`, `fail` (Failed, AppFailed),
`invalid` (fails as an invalid manifest does) or `run <hours>` (succeeds after that many hours of workflow
time); its `delete` update ends it at once as a deleted RayJob (memo `raypilot.io/outcome: deleted`). Its
result names the manifest's metadata so tests see exactly what the tick asked for."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from wire import names
from wire.cronjob import CronJobKey, CronJobRun, CronJobRuns, RayJobRunRef


@workflow.defn(name="RayJobWorkflow")
class FakeRayJobWorkflow:
    def __init__(self) -> None:
        self.deleted = False

    @workflow.run
    async def run(self, manifest: dict[str, Any]) -> dict[str, Any]:
        entrypoint = str(manifest.get("spec", {}).get("entrypoint", "succeed"))
        common = {"metadata": manifest["metadata"], "startedAt": workflow.now().isoformat()}
        if entrypoint == "invalid":
            raise ApplicationError("The RayJob spec is invalid", type="ValidationFailed", non_retryable=True)
        if entrypoint.startswith("run "):
            hours = float(entrypoint.split()[1])
            with contextlib.suppress(TimeoutError):
                await workflow.wait_condition(lambda: self.deleted, timeout=timedelta(hours=hours))
        if self.deleted:
            workflow.upsert_memo({"raypilot.io/outcome": "deleted"})
            return {**common, "jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"}
        workflow.upsert_memo({"raypilot.io/outcome": "finished"})
        if entrypoint == "fail":
            return {**common, "jobDeploymentStatus": "Failed", "jobStatus": "FAILED", "reason": "AppFailed"}
        return {**common, "jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}

    @workflow.update(name="delete")
    async def delete(self) -> dict[str, Any]:
        self.deleted = True
        return {}


@dataclass
class FakeCronJobWorld:
    """The RayCronJob activities over a list of runs the test sets; deletions are recorded. The deletion
    request goes to the (fake) RayJob through the client, as the real activity does."""

    client: Client
    runs: list[CronJobRun] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    deletion_requests: list[str] = field(default_factory=list)

    def activities(self) -> list[Any]:
        world = self

        @activity.defn(name=names.LIST_CRONJOB_RUNS)
        async def list_cronjob_runs(request: CronJobKey) -> CronJobRuns:
            return CronJobRuns(tuple(run for run in world.runs if run.workflow_id not in world.deleted))

        @activity.defn(name=names.DELETE_FINISHED_RAYJOB)
        async def delete_finished_rayjob(request: RayJobRunRef) -> bool:
            world.deleted.append(request.workflow_id)
            return True

        @activity.defn(name=names.REQUEST_RAYJOB_DELETION)
        async def request_rayjob_deletion(request: RayJobRunRef) -> bool:
            world.deletion_requests.append(request.workflow_id)
            await world.client.get_workflow_handle(request.workflow_id).execute_update("delete")
            return True

        return [list_cronjob_runs, delete_finished_rayjob, request_rayjob_deletion]


def finished_run(minute: int, *, succeeded: bool = True, name: str = "nightly") -> CronJobRun:
    status = (
        {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}
        if succeeded
        else {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED"}
    )
    return CronJobRun(
        f"rayjob/jobs/{name}-{minute}", f"run-{minute}", f"{name}-{minute}", "COMPLETED", status
    )


def cronjob_manifest(
    name: str = "nightly",
    namespace: str = "jobs",
    *,
    entrypoint: str = "succeed",
    schedule: str = "45 21 * * *",
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"entrypoint": entrypoint, "clusterSelector": {"ray.io/cluster": "shared"}},
            **spec,
        },
    }
