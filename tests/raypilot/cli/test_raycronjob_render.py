"""`raypilot status raycronjob/...` for people, and the references the cronjob commands take."""

from __future__ import annotations

import pytest

from raypilot.cli.cronjob import (
    CronJobRef,
    is_cronjob_ref,
    parse_cronjob_ref,
    parse_time,
    render_cronjob_status,
)
from raypilot.runs.errors import CommandError


def test_status_shows_last_schedule_time_next_runs_pause_and_each_rayjob() -> None:
    status = {
        "lastScheduleTime": "2026-11-22T13:45:00Z",
        "nextScheduleTimes": ["2026-11-25T13:45:00Z", "2026-11-26T13:45:00Z"],
        "paused": True,
        "note": "maintenance",
        "runningTicks": 0,
        "runs": [
            {
                "name": "taipei-29922585",
                "workflowId": "rayjob/ns/taipei-29922585",
                "workflowState": "COMPLETED",
                "jobDeploymentStatus": "Complete",
            },
            {
                "name": "taipei-29924025",
                "workflowId": "rayjob/ns/taipei-29924025",
                "workflowState": "RUNNING",
                "jobDeploymentStatus": "",
            },
        ],
    }
    lines = render_cronjob_status(CronJobRef("ns", "taipei"), status).splitlines()
    assert lines[:5] == [
        "raycronjob/ns/taipei  (schedule raycronjob/ns/taipei)",
        "last schedule time: 2026-11-22T13:45:00Z",
        "paused: yes (maintenance)",
        "next runs: 2026-11-25T13:45:00Z, 2026-11-26T13:45:00Z",
        "RayJobs (2):",
    ]
    assert lines[5].split() == ["taipei-29922585", "Complete", "workflow", "completed"]
    assert lines[6].split() == ["taipei-29924025", "-", "workflow", "running"]


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("raycronjob/ns/nightly", CronJobRef("ns", "nightly")),
        ("RayCronJob/ns/nightly", CronJobRef("ns", "nightly")),
    ],
)
def test_cronjob_references(text: str, ref: CronJobRef) -> None:
    assert is_cronjob_ref(text)
    assert parse_cronjob_ref(text) == ref
    assert ref.schedule_id == "raycronjob/ns/nightly"


@pytest.mark.parametrize("text", ["raycronjob/ns", "raycronjob//x", "rayjob/ns/x"])
def test_bad_cronjob_references_are_rejected(text: str) -> None:
    with pytest.raises(CommandError) as raised:
        parse_cronjob_ref(text)
    assert raised.value.exit_code == 2


def test_backfill_times_without_an_offset_are_utc() -> None:
    assert parse_time("2026-11-20T00:00:00", "--from") == parse_time("2026-11-20T00:00:00Z", "--from")
    with pytest.raises(CommandError):
        parse_time("yesterday", "--from")
