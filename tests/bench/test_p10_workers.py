"""P10's arithmetic: its size, the kill phase's job lengths, what a history says of a RayJob's end and of the
workers that ran it."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from bench.p10_support import end_and_close, jobs_of_run, kill_sleeps
from bench.suite import DEFAULT_SCALE
from bench.worker_group import jobs_per_worker, task_identities, worker_identity
from wire.observer import OBSERVED_SIGNAL


@pytest.mark.parametrize(
    ("scale", "smoke", "expected"),
    [(DEFAULT_SCALE, False, 2_000), ((500,), False, 500), ((100, 1_000), True, 3), ((300, 50), False, 300)],
)
def test_p10_runs_2000_jobs_unless_a_scale_is_given(
    scale: tuple[int, ...], smoke: bool, expected: int
) -> None:
    assert jobs_of_run(scale, smoke) == expected


def test_the_kill_phases_jobs_end_after_the_ramp_and_settle_spread_over_the_spread() -> None:
    lengths = kill_sleeps(4, ramp_s=100.0, settle_s=20.0, spread_s=60.0)
    assert lengths == [240.0, 255.0, 270.0, 285.0]  # 1.5 x 120 + 60, then a quarter of 60 apart
    assert min(lengths) > 100.0 + 20.0


def _event(kind: str, at: str, **attributes: Any) -> dict[str, Any]:
    name = "".join(part.capitalize() for part in kind.split("_"))
    camel = name[0].lower() + name[1:]
    return {"eventType": f"EVENT_TYPE_{kind.upper()}", "eventTime": at, f"{camel}EventAttributes": attributes}


def test_a_histories_end_seen_is_its_last_observed_signal_and_its_close_its_last_event() -> None:
    events = [
        _event("workflow_execution_started", "2026-01-01T00:00:00Z"),
        _event("workflow_execution_signaled", "2026-01-01T00:00:05Z", signalName=OBSERVED_SIGNAL),
        _event("workflow_task_completed", "2026-01-01T00:00:06Z", identity="1@host"),
        _event("workflow_execution_signaled", "2026-01-01T00:01:00Z", signalName=OBSERVED_SIGNAL),
        _event("workflow_execution_signaled", "2026-01-01T00:01:01Z", signalName="k8s_observed"),
        _event("workflow_task_completed", "2026-01-01T00:01:02Z", identity="2@host"),
        _event("workflow_execution_completed", "2026-01-01T00:01:03Z"),
    ]
    seen, closed = end_and_close(events)
    assert closed - seen == 3.0
    assert end_and_close(events[:-1])[1] == 0.0  # still open
    assert task_identities(events) == Counter({"1@host": 1, "2@host": 1})


def test_a_job_counts_for_every_worker_that_ran_one_of_its_tasks() -> None:
    identities = [worker_identity(1, "host"), worker_identity(2, "host"), worker_identity(3, "host")]
    histories = [Counter({"1@host": 5}), Counter({"1@host": 2, "2@host": 1}), Counter({"9@elsewhere": 1})]
    assert jobs_per_worker(histories, identities) == [2, 1, 0]
