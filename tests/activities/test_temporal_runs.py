"""A RayJob run's start read (`read_run_start`): the operator configuration and the newest closed earlier run
of its id, read together, on a fake Temporal client (what it lists and what fails)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment

from activities.dependencies import ActivityDependencies
from activities.temporal_runs import TEMPORAL_UNAVAILABLE, TemporalRunActivities
from models.operator import JOB_OBSERVER_ENV
from wire.kubernetes import EarlierRun, EarlierRuns, RunStart


@dataclass
class Execution:
    run_id: str
    status: WorkflowExecutionStatus
    start_time: datetime
    memo_values: dict[str, Any]

    async def memo(self) -> dict[str, Any]:
        return self.memo_values


class FakeClient:
    """Lists the given runs of the id, or fails as an unavailable visibility store does."""

    def __init__(self, executions: Sequence[Execution], *, unavailable: bool = False) -> None:
        self.executions = executions
        self.unavailable = unavailable

    async def list_workflows(self, query: str, limit: int) -> AsyncIterator[Execution]:
        if self.unavailable:
            raise RPCError("visibility unavailable", RPCStatusCode.UNAVAILABLE, b"")
        for execution in self.executions:
            yield execution


async def read(client: FakeClient) -> RunStart:
    dependencies = ActivityDependencies.from_env({}, temporal_client=cast(Client, client))
    activities = TemporalRunActivities(dependencies)
    result: RunStart = await ActivityEnvironment().run(
        activities.read_run_start, EarlierRuns("rayjob/default/job", "run-2")
    )
    return result


def at(minute: int) -> datetime:
    return datetime(2026, 1, 1, 0, minute, tzinfo=UTC)


async def test_the_start_read_has_the_configuration_and_the_newest_closed_earlier_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(JOB_OBSERVER_ENV, "false")
    memo = {"raypilot.io/outcome": "deleted", "raypilot.io/generation": 2, "raypilot.io/spec-hash": "h"}
    start = await read(
        FakeClient(
            [
                Execution("run-0", WorkflowExecutionStatus.TERMINATED, at(0), {}),
                Execution("run-1", WorkflowExecutionStatus.TERMINATED, at(1), memo),
                # The asking run itself, and a run visibility still shows as running, are never the answer.
                Execution("run-2", WorkflowExecutionStatus.RUNNING, at(3), {}),
                Execution("run-3", WorkflowExecutionStatus.RUNNING, at(2), {}),
            ]
        )
    )
    assert start.config.job_observer is False
    assert start.earlier == EarlierRun("run-1", "TERMINATED", "deleted", 2, "h", None)


async def test_a_first_run_has_no_earlier_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOB_OBSERVER_ENV, raising=False)
    start = await read(FakeClient([Execution("run-2", WorkflowExecutionStatus.RUNNING, at(0), {})]))
    assert start.config.job_observer is True
    assert start.earlier is None


async def test_the_start_read_fails_retryably_while_temporal_cannot_tell() -> None:
    with pytest.raises(ApplicationError) as raised:
        await read(FakeClient([], unavailable=True))
    assert raised.value.type == TEMPORAL_UNAVAILABLE
    assert not raised.value.non_retryable
