"""Ray Dashboard activities: Jobs (submit, info, stop, delete, logs) and Serve (applications, config, health).

Async (httpx); one request each, plus the Secret read when the cluster uses token auth. Answers are trimmed
to what the workflows decide on, because they land in workflow history.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.dashboard_client import DashboardClient, head_serve_healthy
from activities.errors import RAY_JOB_STILL_RUNNING
from wire import stubs
from wire.dashboard import (
    DashboardTarget,
    HeadServeHealth,
    JobInfoAnswer,
    JobLogs,
    PutServeConfig,
    RayJobKey,
    StopJobResult,
    SubmitJob,
    SubmitJobResult,
    SubmittedJob,
)
from wire.stubs.common import implements

if TYPE_CHECKING:
    from activities.dependencies import ActivityDependencies

SUBMISSION_ID_TAKEN: Final = "Please use a different submission_id"
MAX_JOB_MESSAGE_CHARS: Final = 4096
MAX_SERVE_MESSAGE_CHARS: Final = 2048
_REPLICA_FIELDS: Final = ("replica_id", "state", "rank", "node_rank", "local_rank", "world_size")


def shorten_middle(text: str, limit: int) -> str:
    """`text` cut to `limit` characters by dropping its middle: a Ray job's failure message starts with the
    reason and ends with the last log lines, both worth keeping."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]}\n...\n{text[len(text) - half :]}"


def submitted_job(details: dict[str, Any]) -> SubmittedJob:
    """One entry of `GET /api/jobs/` (Ray's JobDetails); missing or mistyped fields count as absent."""
    metadata = details.get("metadata")
    start = details.get("start_time")
    return SubmittedJob(
        submission_id=str(details.get("submission_id") or ""),
        entrypoint=str(details.get("entrypoint") or ""),
        metadata={str(k): str(v) for k, v in metadata.items()} if isinstance(metadata, dict) else None,
        status=str(details.get("status") or ""),
        start_time_ms=start if isinstance(start, int) else 0,
    )


def json_object(response: httpx.Response) -> dict[str, Any]:
    """The response's JSON object, {} when the body is not one (callers treat missing keys as absent)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def job_info_answer(body: Any) -> JobInfoAnswer:
    """JobDetails JSON -> JobInfoAnswer (unavailable when it is not JobDetails)."""
    if not isinstance(body, Mapping) or not isinstance(body.get("status"), str):
        return JobInfoAnswer("unavailable", error=f"GetJobInfo fail: {str(body)[:300]}")

    def millis(value: Any) -> int:
        return int(value) if isinstance(value, int | float) else 0

    return JobInfoAnswer(
        "found",
        status=body["status"],
        message=shorten_middle(str(body.get("message") or ""), MAX_JOB_MESSAGE_CHARS),
        start_time_ms=millis(body.get("start_time")),
        end_time_ms=millis(body.get("end_time")),
        error_type=str(body.get("error_type") or ""),
    )


def trim_serve_details(body: Mapping[str, Any]) -> dict[str, Any]:
    """ServeInstanceDetails reduced to what `parse_serve_details` reads: per application status, message,
    route prefix and deployments (status, message, target and configured replicas, replicas' id/state/rank),
    and the applied target_capacity."""
    applications: dict[str, Any] = {}
    for app_name, app in (body.get("applications") or {}).items():
        deployments: dict[str, Any] = {}
        for name, deployment in (app.get("deployments") or {}).items():
            deployments[name] = {
                "status": deployment.get("status"),
                "message": shorten_middle(str(deployment.get("message") or ""), MAX_SERVE_MESSAGE_CHARS),
                "target_num_replicas": deployment.get("target_num_replicas"),
                # The configured num_replicas: what a replica sees as its world_size.
                "num_replicas": (deployment.get("deployment_config") or {}).get("num_replicas"),
                "replicas": [
                    {key: replica[key] for key in _REPLICA_FIELDS if key in replica}
                    for replica in deployment.get("replicas") or []
                ],
            }
        applications[app_name] = {
            "status": app.get("status"),
            "message": shorten_middle(str(app.get("message") or ""), MAX_SERVE_MESSAGE_CHARS),
            "route_prefix": app.get("route_prefix"),
            "deployments": deployments,
        }
    return {"applications": applications, "target_capacity": body.get("target_capacity")}


async def fetch_job_info(client: DashboardClient, submission_id: str) -> JobInfoAnswer:
    """GET /api/jobs/<id> as found / not_found / unavailable; never raises for what the dashboard answers."""
    try:
        response = await client.request("GET", f"/api/jobs/{submission_id}")
    except httpx.HTTPError as exc:
        return JobInfoAnswer(
            "unavailable", error=client.redact(f"GetJobInfo fail: {type(exc).__name__}: {exc}")
        )
    if response.status_code == 404:
        return JobInfoAnswer("not_found")
    if not response.is_success:
        error = f"GetJobInfo fail: HTTP {response.status_code}: {response.text[:300]}"
        return JobInfoAnswer("unavailable", error=client.redact(error))
    try:
        body = response.json()
    except ValueError:
        return JobInfoAnswer("unavailable", error=client.redact(f"GetJobInfo fail: {response.text[:300]}"))
    return job_info_answer(body)


async def fetch_serve_details(client: DashboardClient) -> dict[str, Any]:
    what = "GetServeDetails fail"
    response = await client.call("GET", "/api/serve/applications/?api_type=declarative", what)
    assert response is not None  # only a missing-tolerant call answers None
    try:
        return trim_serve_details(response.json())
    except (ValueError, AttributeError):
        raise client.error(response, f"{what}: not ServeInstanceDetails") from None


async def post_job(client: DashboardClient, body: dict[str, Any], what: str) -> dict[str, Any] | None:
    """POST /api/jobs/: the dashboard's answer, or None when the submission id exists already. Ray answers a
    duplicate with a 500 (apis-and-peers A.5); raypilot's ids are deterministic, so an existing one is an
    earlier attempt's own submission."""
    try:
        response = await client.request("POST", "/api/jobs/", body)
    except httpx.HTTPError as exc:
        raise client.transport_error(exc, what) from None
    if not response.is_success and SUBMISSION_ID_TAKEN in response.text:
        return None
    if not response.is_success:
        raise client.error(response, what)
    return json_object(response)


class DashboardActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    async def _client(self, target: DashboardTarget) -> DashboardClient:
        return await DashboardClient.open(self.dependencies, target)

    @implements(stubs.submit_job)
    async def submit_job(self, request: SubmitJob) -> SubmitJobResult:
        """POST /api/jobs/. A submission id that exists already is success (created=False): the workflow
        chose it deterministically, so an earlier attempt of this activity submitted it."""
        client = await self._client(request.target)
        submission_id = str(request.request.get("submission_id") or "")
        answer = await post_job(client, request.request, f"SubmitJob fail ({submission_id})")
        if answer is None:
            activity.logger.info("Ray job %s was submitted already", submission_id)
            return SubmitJobResult(submission_id=submission_id, created=False)
        submitted = str(answer.get("submission_id") or answer.get("job_id") or submission_id)
        activity.logger.info("submitted Ray job %s", submitted)
        return SubmitJobResult(submission_id=submitted, created=True)

    @implements(stubs.get_job_info)
    async def get_job_info(self, key: RayJobKey) -> JobInfoAnswer:
        """found / not_found / unavailable (a failed status check, which the workflow times out)."""
        client = await self._client(key.target)
        return await fetch_job_info(client, key.submission_id)

    @implements(stubs.list_submitted_jobs)
    async def list_submitted_jobs(self, target: DashboardTarget) -> list[SubmittedJob]:
        """GET /api/jobs/: every submitted Ray job with its entrypoint and metadata (an adopted RayJob finds
        KubeRay's submission among them). A failure raises, classified (the workflow's retries decide)."""
        client = await self._client(target)
        response = await client.call("GET", "/api/jobs/", "ListJobs fail")
        try:
            body: Any = response.json() if response is not None else []
        except ValueError:
            body = []
        listed = body if isinstance(body, list) else []
        return [submitted_job(details) for details in listed if isinstance(details, dict)]

    @implements(stubs.stop_job)
    async def stop_job(self, key: RayJobKey) -> StopJobResult:
        """POST /api/jobs/<id>/stop. `stopped: false` is success when the job is terminal already; while it
        is still running a retryable RayJobStillRunning error asks for another try."""
        client = await self._client(key.target)
        what = f"StopJob fail ({key.submission_id})"
        path = f"/api/jobs/{key.submission_id}/stop"
        response = await client.call("POST", path, what, none_if_missing=True)
        if response is None:
            return StopJobResult(found=False, stopped=False)
        if json_object(response).get("stopped") is True:
            activity.logger.info("asked Ray job %s to stop", key.submission_id)
            return StopJobResult(found=True, stopped=True)
        info = await fetch_job_info(client, key.submission_id)
        if info.outcome == "not_found":
            return StopJobResult(found=False, stopped=False)
        if info.terminal:
            return StopJobResult(found=True, stopped=False, status=info.status)
        raise ApplicationError(
            f"{what}: the job was not stopped and is {info.status or 'in an unknown state'}",
            type=RAY_JOB_STILL_RUNNING,
        )

    @implements(stubs.delete_ray_job)
    async def delete_job(self, key: RayJobKey) -> bool:
        """DELETE /api/jobs/<id> (its record only; the job must be terminal). False when it did not exist."""
        client = await self._client(key.target)
        what = f"DeleteJob fail ({key.submission_id})"
        path = f"/api/jobs/{key.submission_id}"
        return await client.call("DELETE", path, what, none_if_missing=True) is not None

    @implements(stubs.get_job_logs)
    async def get_job_logs(self, request: JobLogs) -> str:
        """The last `tail_chars` characters of the job's driver log ("" when the job does not exist)."""
        client = await self._client(request.target)
        what = f"GetJobLogs fail ({request.submission_id})"
        path = f"/api/jobs/{request.submission_id}/logs"
        response = await client.call("GET", path, what, none_if_missing=True)
        if response is None:
            return ""
        logs = str(json_object(response).get("logs") or "")
        return logs[-request.tail_chars :] if request.tail_chars > 0 else ""

    @implements(stubs.get_serve_applications)
    async def get_serve_applications(self, target: DashboardTarget) -> dict[str, Any]:
        """GET /api/serve/applications/?api_type=declarative, trimmed (see `trim_serve_details`)."""
        return await fetch_serve_details(await self._client(target))

    @implements(stubs.put_serve_config)
    async def put_serve_config(self, request: PutServeConfig) -> None:
        """PUT /api/serve/applications/ (declarative: applications not listed are removed). A 4xx (a config
        Serve rejects) is permanent; Serve applies an accepted config asynchronously."""
        client = await self._client(request.target)
        await client.call("PUT", "/api/serve/applications/", "UpdateDeployments fail", request.config)
        activity.logger.info(
            "applied Serve config with %d applications", len(request.config.get("applications") or [])
        )

    @implements(stubs.check_serve_health)
    async def check_serve_health(self, head: HeadServeHealth) -> bool:
        return await head_serve_healthy(self.dependencies, head) is True
