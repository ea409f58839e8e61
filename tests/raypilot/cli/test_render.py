"""The status views are pure functions of status dicts: tables of statuses and the lines they must show."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from raypilot.cli.render import (
    PhaseMark,
    advance_timeline,
    bar,
    format_duration,
    render_status,
    render_timeline,
    status_phase,
)

NOW = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)


def condition(kind: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-11-21T09:59:00Z",
    }


def side(
    cluster: str, traffic: int | None, capacity: int | None, apps: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"rayClusterName": cluster, "rayClusterStatus": {"state": "ready"}}
    if traffic is not None:
        body["trafficRoutedPercent"] = traffic
    if capacity is not None:
        body["targetCapacity"] = capacity
    if apps:
        body["applicationStatuses"] = apps
    return body


UPGRADING = {
    "conditions": [
        condition("Ready", reason="NonZeroServeEndpoints"),
        condition("UpgradeInProgress", reason="BothActivePendingClustersExist"),
    ],
    "serviceStatus": "Running",
    "numServeEndpoints": 2,
    "activeServiceStatus": side("svc-aaaaa", 70, 100),
    "pendingServiceStatus": side(
        "svc-bbbbb",
        30,
        40,
        {
            "app": {
                "status": "RUNNING",
                "serveDeploymentStatuses": {
                    "Model": {"status": "HEALTHY", "replicas": [{"id": "r1", "state": "RUNNING"}]},
                    "Router": {"status": "UPDATING"},
                },
            }
        },
    ),
}
RUNNING_SERVICE = {
    "conditions": [condition("Ready", reason="NonZeroServeEndpoints")],
    "serviceStatus": "Running",
    "numServeEndpoints": 1,
    "activeServiceStatus": side("svc-aaaaa", None, None),
}


@pytest.mark.parametrize(
    ("kind", "status", "phase"),
    [
        ("rayjob", {}, "New"),
        ("RayJob", {"jobDeploymentStatus": "Running"}, "Running"),
        ("rayjob", {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}, "Complete"),
        ("rayservice", {}, "Initializing"),
        ("rayservice", RUNNING_SERVICE, "Running"),
        ("rayservice", UPGRADING, "Upgrading"),  # the query's extra `replicas` do not break the model
        ("rayservice", {"conditions": [condition("RollbackInProgress")]}, "RollingBack"),
        ("rayservice", {"conditions": "not a list"}, "Unknown"),
    ],
)
def test_phase_of_each_kind(kind: str, status: dict[str, Any], phase: str) -> None:
    assert status_phase(kind, status) == phase


@pytest.mark.parametrize(
    ("fraction", "expected"),
    [
        (0.0, "[..........]"),
        (0.3, "[###.......]"),
        (1.0, "[##########]"),
        (1.7, "[##########]"),
        (-1, "[..........]"),
    ],
)
def test_bar_is_clamped_and_proportional(fraction: float, expected: str) -> None:
    assert bar(fraction, width=10) == expected


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0 s"), (42.9, "42 s"), (185, "3m05s"), (3720, "1h02m"), (-5, "0 s")]
)
def test_durations_are_short(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_timeline_appends_only_phase_changes() -> None:
    timeline = advance_timeline((), "Initializing", NOW)
    timeline = advance_timeline(timeline, "Initializing", NOW + timedelta(seconds=3))
    timeline = advance_timeline(timeline, "Running", NOW + timedelta(seconds=5))
    assert timeline == (PhaseMark("Initializing", NOW), PhaseMark("Running", NOW + timedelta(seconds=5)))
    lines = render_timeline(timeline, NOW + timedelta(seconds=65))
    assert lines[1].split() == ["10:00:00", "Initializing", "5", "s"]
    assert lines[2].split() == ["10:00:05", "Running", "1m00s", "(now)"]
    closed = render_timeline(timeline, NOW + timedelta(seconds=65), closed=True)
    assert closed[2].split() == ["10:00:05", "Running"]


def test_running_rayjob_shows_job_cluster_and_run_time_against_its_deadline() -> None:
    status = {
        "jobDeploymentStatus": "Running",
        "jobStatus": "RUNNING",
        "jobId": "sample-x7k2p",
        "rayClusterName": "sample-abcde",
        "rayClusterStatus": {
            "state": "ready",
            "desiredWorkerReplicas": 2,
            "readyWorkerReplicas": 1,
            "conditions": [condition("HeadPodReady", reason="HeadPodRunningAndReady")],
        },
        "startTime": "2026-11-21T09:59:30Z",
    }
    text = render_status("rayjob", status, ref="rayjob/default/sample", now=NOW, active_deadline_seconds=60)
    lines = text.splitlines()
    assert lines[0] == "rayjob/default/sample  Running"
    assert "  job id       sample-x7k2p" in lines
    assert "  cluster      sample-abcde (ready, 1/2 workers ready)" in lines
    started = next(line for line in lines if "started" in line)
    assert "run time 30 s" in started
    assert f"{bar(0.5)} of 1m00s deadline" in started
    assert any(line.split()[:3] == ["HeadPodReady", "True", "HeadPodRunningAndReady"] for line in lines)


def test_finished_rayjob_counts_run_time_to_its_end_and_says_completed() -> None:
    status = {
        "jobDeploymentStatus": "Failed",
        "jobStatus": "FAILED",
        "reason": "DeadlineExceeded",
        "message": "The RayJob has passed the activeDeadlineSeconds.",
        "startTime": "2026-11-21T09:00:00Z",
        "endTime": "2026-11-21T09:02:05Z",
        "failed": 1,
    }
    text = render_status("rayjob", status, ref="rayjob/ns/j", now=NOW, completed=True)
    assert text.splitlines()[0] == "rayjob/ns/j  Failed  (workflow completed)"
    assert "run time 2m05s" in text
    assert "  reason       DeadlineExceeded" in text
    assert "  attempts     0 succeeded, 1 failed" in text
    assert "deadline" not in text.split("message")[0]  # no bar without a known deadline


def test_incremental_upgrade_shows_traffic_and_capacity_of_both_sides() -> None:
    lines = render_status("rayservice", UPGRADING, ref="rayservice/default/svc").splitlines()
    assert lines[0] == "rayservice/default/svc  Upgrading"
    active = lines.index("  active   svc-aaaaa (ready)")
    assert lines[active + 1].split() == ["traffic", bar(0.7), "70%", "capacity", bar(1.0), "100%"]
    pending = lines.index("  pending  svc-bbbbb (ready)")
    assert lines[pending + 1].split() == ["traffic", bar(0.3), "30%", "capacity", bar(0.4), "40%"]
    assert lines[pending + 2].strip() == "app app: RUNNING (1/2 deployments HEALTHY)"
    assert any(line.split()[:2] == ["UpgradeInProgress", "True"] for line in lines)


def test_service_without_upgrade_shows_no_bars_or_pending_side() -> None:
    text = render_status("rayservice", RUNNING_SERVICE)
    assert "traffic" not in text
    assert "pending" not in text
    assert text.splitlines()[0] == "Running"
    assert "serve endpoints 1" in text


def test_timeline_is_part_of_the_view_when_given() -> None:
    timeline = (PhaseMark("Initializing", NOW - timedelta(seconds=10)), PhaseMark("Running", NOW))
    text = render_status("rayjob", {"jobDeploymentStatus": "Running"}, now=NOW, timeline=timeline)
    assert "timeline:" in text
    assert "Initializing" in text.split("timeline:")[1]
