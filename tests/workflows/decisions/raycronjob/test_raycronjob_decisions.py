"""RayCronJob decisions: each tick's RayJob (name, labels, annotation, spec), which finished RayJobs the
history limits delete, and the Temporal Schedule made of a RayCronJob."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from models.manifest import parse_raycronjob
from models.raycronjob import ConcurrencyPolicy, ScheduleSettings
from wire.cronjob import CronJobRun
from workflows.decisions.raycronjob.runs import (
    child_rayjob_manifest,
    child_rayjob_name,
    run_outcome,
    runs_to_prune,
    scheduled_time_from_tick_id,
)
from workflows.decisions.raycronjob.schedule import (
    DEFAULT_CATCHUP_WINDOW_SECONDS,
    overlap_policy,
    schedule_plan,
    value_ranges,
)

TEMPLATE: dict[str, Any] = {"entrypoint": "python x.py", "clusterSelector": {"ray.io/cluster": "shared"}}


def cronjob(schedule: str = "45 21 * * *", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "nightly", "namespace": "jobs", "labels": {"team": "a"}},
        "spec": {"schedule": schedule, "jobTemplate": TEMPLATE, **spec},
    }


@pytest.mark.parametrize(
    ("scheduled", "name"),
    [
        (datetime(2026, 11, 25, 13, 45, tzinfo=UTC), "nightly-29926905"),
        (datetime(2026, 11, 25, 13, 45, 59, tzinfo=UTC), "nightly-29926905"),  # same minute, same name
        (datetime(2026, 11, 25, 21, 45, tzinfo=timezone(timedelta(hours=8))), "nightly-29926905"),
        (datetime(1970, 1, 1, 0, 1, tzinfo=UTC), "nightly-1"),
    ],
)
def test_a_ticks_rayjob_is_named_after_its_unix_minute(scheduled: datetime, name: str) -> None:
    assert child_rayjob_name("nightly", scheduled) == name


def test_a_ticks_rayjob_carries_kuberays_label_annotation_and_the_template_unchanged() -> None:
    scheduled = datetime(2026, 11, 25, 21, 45, tzinfo=timezone(timedelta(hours=8)))
    assert child_rayjob_manifest(cronjob(), scheduled) == {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": "nightly-29926905",
            "namespace": "jobs",
            "labels": {"ray.io/cronjob-name": "nightly"},
            "annotations": {"ray.io/cronjob-scheduled-timestamp": "2026-11-25T13:45:00Z"},
        },
        "spec": TEMPLATE,
    }


@pytest.mark.parametrize(
    ("tick_id", "scheduled"),
    [
        ("raycronjob/jobs/nightly-2026-11-25T13:45:00Z", datetime(2026, 11, 25, 13, 45, tzinfo=UTC)),
        ("raycronjob/jobs/a-1-2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)),
        ("raycronjob/jobs/nightly", None),
        ("raycronjob/jobs/nightly-2026-11-25T13:45:00+08:00", None),
    ],
)
def test_the_scheduled_time_is_the_nominal_time_temporal_appends_to_the_tick_id(
    tick_id: str, scheduled: datetime | None
) -> None:
    assert scheduled_time_from_tick_id(tick_id) == scheduled


def run(minute: int, state: str = "COMPLETED", phase: str = "Complete", job: str = "SUCCEEDED") -> CronJobRun:
    status = {"jobDeploymentStatus": phase, "jobStatus": job} if state == "COMPLETED" else None
    return CronJobRun(f"rayjob/jobs/nightly-{minute}", f"run-{minute}", f"nightly-{minute}", state, status)


@pytest.mark.parametrize(
    ("candidate", "outcome"),
    [
        (run(1), "succeeded"),
        (run(1, state="RUNNING"), "running"),
        (run(1, phase="Failed", job="FAILED"), "failed"),
        (run(1, phase="Complete", job="STOPPED"), "failed"),
        (run(1, phase="ValidationFailed", job=""), "failed"),
        (run(1, state="TERMINATED"), "failed"),
        (run(1, state="FAILED"), "failed"),
    ],
)
def test_run_outcomes_count_as_batch_v1_counts_jobs(candidate: CronJobRun, outcome: str) -> None:
    assert run_outcome(candidate) == outcome


@pytest.mark.parametrize(
    ("runs", "settings", "pruned"),
    [
        ([], ScheduleSettings(), []),
        # defaults 3 successful, 1 failed: the oldest beyond them go
        ([run(m) for m in (5, 1, 4, 2, 3)], ScheduleSettings(), [1, 2]),
        (
            [run(1, phase="Failed", job="FAILED"), run(2, phase="Failed", job="FAILED"), run(3)],
            ScheduleSettings(),
            [1],
        ),
        # running RayJobs never count and are never pruned
        ([run(1, state="RUNNING"), run(2), run(3)], ScheduleSettings(successful_jobs_history_limit=1), [2]),
        ([run(1), run(2)], ScheduleSettings(successful_jobs_history_limit=0), [1, 2]),
        ([run(1), run(2, state="TERMINATED")], ScheduleSettings(failed_jobs_history_limit=0), [2]),
        ([run(m) for m in range(1, 4)], ScheduleSettings(successful_jobs_history_limit=10), []),
    ],
)
def test_history_limits_prune_the_oldest_finished_rayjobs(
    runs: list[CronJobRun], settings: ScheduleSettings, pruned: list[int]
) -> None:
    assert [candidate.name for candidate in runs_to_prune(runs, settings)] == [f"nightly-{m}" for m in pruned]


@pytest.mark.parametrize(
    ("values", "ranges"),
    [
        (frozenset(), ()),
        (frozenset({5}), ((5, 5),)),
        (frozenset({0, 1, 2, 5}), ((0, 2), (5, 5))),
        (frozenset({0, 15, 30, 45}), ((0, 0), (15, 15), (30, 30), (45, 45))),
        (frozenset(range(60)), ((0, 59),)),
    ],
)
def test_value_ranges(values: frozenset[int], ranges: tuple[tuple[int, int], ...]) -> None:
    assert value_ranges(values) == ranges


@pytest.mark.parametrize(
    ("policy", "overlap"),
    [
        (ConcurrencyPolicy.ALLOW, "ALLOW_ALL"),
        (ConcurrencyPolicy.FORBID, "SKIP"),
        (ConcurrencyPolicy.REPLACE, "CANCEL_OTHER"),
        (ConcurrencyPolicy.BUFFER_ONE, "BUFFER_ONE"),
        (ConcurrencyPolicy.BUFFER_ALL, "BUFFER_ALL"),
    ],
)
def test_concurrency_policies_map_to_temporal_overlap_policies(
    policy: ConcurrencyPolicy, overlap: str
) -> None:
    assert overlap_policy(policy) == overlap


def test_the_schedule_of_kuberays_timezone_sample() -> None:
    plan = schedule_plan(parse_raycronjob(cronjob(timeZone="Asia/Taipei")), ScheduleSettings())
    assert len(plan.calendars) == 1
    calendar = plan.calendars[0]
    assert (calendar.minutes, calendar.hours) == (((45, 45),), ((21, 21),))
    assert (calendar.days_of_month, calendar.months, calendar.days_of_week) == (
        ((1, 31),),
        ((1, 12),),
        ((0, 6),),
    )
    assert (plan.time_zone, plan.interval_seconds, plan.overlap, plan.paused) == (
        "Asia/Taipei",
        None,
        "ALLOW_ALL",
        False,
    )
    assert plan.catchup_window_seconds == DEFAULT_CATCHUP_WINDOW_SECONDS


def test_day_of_month_or_day_of_week_becomes_two_calendars() -> None:
    plan = schedule_plan(parse_raycronjob(cronjob("0 0 1 * 1")), ScheduleSettings())
    assert [(c.days_of_month, c.days_of_week) for c in plan.calendars] == [
        (((1, 1),), ((0, 6),)),
        (((1, 31),), ((1, 1),)),
    ]


@pytest.mark.parametrize(
    ("spec", "settings", "interval", "catchup", "jitter", "paused", "time_zone"),
    [
        (
            {"schedule": "@every 1h30m"},
            ScheduleSettings(),
            5400,
            DEFAULT_CATCHUP_WINDOW_SECONDS,
            0,
            False,
            "UTC",
        ),
        ({"suspend": True}, ScheduleSettings(), None, DEFAULT_CATCHUP_WINDOW_SECONDS, 0, True, "UTC"),
        ({}, ScheduleSettings(starting_deadline_seconds=300, jitter_seconds=30), None, 300, 30, False, "UTC"),
        ({}, ScheduleSettings(starting_deadline_seconds=0), None, 10, 0, False, "UTC"),  # Temporal's minimum
    ],
)
def test_schedule_settings_become_the_schedules_policies(
    spec: dict[str, Any],
    settings: ScheduleSettings,
    interval: int | None,
    catchup: int,
    jitter: int,
    paused: bool,
    time_zone: str,
) -> None:
    manifest = cronjob(**{key: value for key, value in spec.items() if key != "schedule"})
    manifest["spec"]["schedule"] = spec.get("schedule", "45 21 * * *")
    plan = schedule_plan(parse_raycronjob(manifest), settings)
    assert (
        plan.interval_seconds,
        plan.catchup_window_seconds,
        plan.jitter_seconds,
        plan.paused,
        plan.time_zone,
    ) == (
        interval,
        catchup,
        jitter,
        paused,
        time_zone,
    )
    assert (plan.calendars == ()) is (interval is not None)
