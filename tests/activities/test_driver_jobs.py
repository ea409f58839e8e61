"""The run of a driver job that the replica-ranks and connection-closing activities share, against a
scripted dashboard: the requests it makes, the record it deletes, the error when the job disappears and the
answer when it gave none."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.dashboard_client import DashboardClient
from activities.dependencies import ActivityDependencies
from activities.driver_jobs import DriverJobKind, run_driver_job
from wire.dashboard import DashboardTarget

KIND = DriverJobKind(
    activity="ReadThings", label="things", metadata={"raypilot": "things"}, lost_type="ThingsLost"
)


class ScriptedDashboard(DashboardClient):
    """Answers each (method, path) from `answers` (the last answer repeats) and records the requests."""

    def __init__(self, answers: dict[tuple[str, str], list[httpx.Response]]) -> None:
        dependencies = cast(ActivityDependencies, SimpleNamespace(dashboard_access="direct"))
        super().__init__(dependencies, DashboardTarget(namespace="ns", head_service="rc-head-svc"), None)
        self.answers = answers
        self.requests: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, json_body: Any = None) -> httpx.Response:
        self.requests.append((method, path, json_body))
        queue = self.answers.get((method, path)) or [httpx.Response(404)]
        return queue.pop(0) if len(queue) > 1 else queue[0]


def job(status: str, message: str = "") -> httpx.Response:
    return httpx.Response(200, json={"submission_id": "job-1", "status": status, "message": message})


def finished(status: str, message: str, logs: str) -> ScriptedDashboard:
    return ScriptedDashboard(
        {
            ("POST", "/api/jobs/"): [httpx.Response(200, json={"submission_id": "job-1"})],
            ("GET", "/api/jobs/job-1"): [job("RUNNING"), job(status, message)],
            ("GET", "/api/jobs/job-1/logs"): [httpx.Response(200, json={"logs": logs})],
            ("DELETE", "/api/jobs/job-1"): [httpx.Response(200, json={})],
        }
    )


async def test_a_finished_job_is_read_and_its_record_deleted() -> None:
    dashboard = finished("SUCCEEDED", "", "THINGS 3\n")
    run = await ActivityEnvironment().run(run_driver_job, dashboard, KIND, "python -c pass", "job-1", 0.0)
    assert (run.info.status, run.logs) == ("SUCCEEDED", "THINGS 3\n")
    assert dashboard.requests == [
        (
            "POST",
            "/api/jobs/",
            {"entrypoint": "python -c pass", "submission_id": "job-1", "metadata": KIND.metadata},
        ),
        ("GET", "/api/jobs/job-1", None),
        ("GET", "/api/jobs/job-1", None),
        ("GET", "/api/jobs/job-1/logs", None),
        ("DELETE", "/api/jobs/job-1", None),
    ]


@pytest.mark.parametrize(
    ("message", "logs", "failure"),
    [
        ("boom", "Traceback ...", "the things job ended FAILED: boom"),
        ("", "Traceback: no controller", "the things job ended FAILED: Traceback: no controller"),
    ],
)
async def test_a_job_without_an_answer_says_why(message: str, logs: str, failure: str) -> None:
    dashboard = finished("FAILED", message, logs)
    run = await ActivityEnvironment().run(run_driver_job, dashboard, KIND, "python -c pass", "job-1", 0.0)
    assert run.failure(dashboard) == failure


async def test_a_job_that_disappears_raises_the_kinds_error() -> None:
    dashboard = ScriptedDashboard(
        {("POST", "/api/jobs/"): [httpx.Response(200, json={"submission_id": "job-1"})]}
    )
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(run_driver_job, dashboard, KIND, "python -c pass", "job-1", 0.0)
    assert (raised.value.type, raised.value.message) == (
        "ThingsLost",
        "ReadThings fail (job-1): the job disappeared",
    )
    assert [method for method, _, _ in dashboard.requests] == ["POST", "GET"]  # no logs read, nothing deleted
