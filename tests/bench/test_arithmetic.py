"""The suite's own arithmetic: percentiles, ratios, KubeRay's tick model, actions and heartbeats counted
from a recorded history."""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from activities.observer_fanout import OBSERVER_HEARTBEAT_SECONDS
from bench.arithmetic import (
    Figure,
    activity_spans,
    count_actions,
    cpu_bound_ratio,
    cpu_for_ratio,
    cpu_ms_each,
    event_kind,
    heartbeat_throttle_s,
    heartbeats_reaching_server,
    kuberay_step_errors,
    kuberay_tick_after,
    markdown_table,
    observer_heartbeats,
    observer_run_actions,
    parse_event_time,
    percentile,
    ratio,
    signal_times,
)
from bench.p4_history import cost_of, heartbeat_call_period_s, observers_cost
from bench.p7_own_clusters import OwnClusterPoint
from bench.p7_scale import own_clusters_met
from bench.progress import Progress, bar_text
from bench.suite import record_text
from sandbox.ray.simulated import dashboard_requests_exposition
from tests.integration.rayjob_support import job_reads_in

HISTORIES = Path(__file__).parents[1] / "replay" / "histories"


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([3.0], 50, 3.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([4.0, 1.0, 3.0, 2.0], 0, 1.0),
        ([4.0, 1.0, 3.0, 2.0], 100, 4.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 90, 4.6),
        ([0.0, 10.0], 99, 9.9),
    ],
)
def test_percentile_interpolates_between_ranks(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


@pytest.mark.parametrize(("values", "q"), [([], 50), ([1.0], -1), ([1.0], 101)])
def test_percentile_rejects_what_has_none(values: list[float], q: float) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 (two distinct messages)
        percentile(values, q)


def test_the_cpu_bound_of_a_ratio_is_the_reference_cpu_over_the_measured() -> None:
    # P5 of 2026-11-28: bare worker 16 + server 16 ms against raypilot's worker 56 + server 53 ms.
    assert cpu_bound_ratio([16, 16], [56, 53]) == pytest.approx(32 / 109)
    assert cpu_bound_ratio([], []) == 1.0
    # 0.7 of bare needs raypilot's worker and server together at 32 / 0.7 ms per lifecycle.
    assert cpu_for_ratio([16, 16], 0.7) == pytest.approx(45.714, abs=1e-3)
    assert cpu_bound_ratio([16, 16], [cpu_for_ratio([16, 16], 0.7)]) == pytest.approx(0.7)
    with pytest.raises(ValueError, match="needs no bound"):
        cpu_for_ratio([16], 0)


@pytest.mark.parametrize(
    ("cpu_seconds", "items", "expected_ms"), [(7.5, 100, 75.0), (0.0, 3, 0.0), (2.0, 1, 2000.0)]
)
def test_cpu_ms_each_spreads_a_batch_over_items(cpu_seconds: float, items: int, expected_ms: float) -> None:
    assert cpu_ms_each(cpu_seconds, items) == pytest.approx(expected_ms)


@pytest.mark.parametrize("items", [0, -1])
def test_cpu_ms_each_rejects_an_empty_batch(items: int) -> None:
    with pytest.raises(ValueError, match="no per-item cost"):
        cpu_ms_each(1.0, items)


@pytest.mark.parametrize(
    ("measured", "reference", "expected"),
    [(1.0, 4.0, 0.25), (3.0, 3.0, 1.0), (0.0, 0.0, 1.0), (2.0, 0.0, math.inf), (0.0, 5.0, 0.0)],
)
def test_ratio(measured: float, reference: float, expected: float) -> None:
    assert ratio(measured, reference) == expected


@pytest.mark.parametrize(
    ("due", "tick", "phase", "expected"),
    [
        (5.0, 2.0, 0.0, 6.0),  # between ticks: the next one
        (6.0, 2.0, 0.0, 6.0),  # on a tick: that one
        (5.0, 3.0, 1.0, 7.0),  # ticks at 1, 4, 7
        (0.5, 2.0, 1.0, 1.0),  # already due at the first tick
    ],
)
def test_kuberay_acts_at_the_first_tick_at_or_after_the_due_time(
    due: float, tick: float, phase: float, expected: float
) -> None:
    assert kuberay_tick_after(due, tick, phase) == expected


@pytest.mark.parametrize(
    ("steps", "interval", "tick", "expected"),
    [(4, 3.0, 2.0, [1.0, 1.0, 1.0]), (3, 4.0, 2.0, [0.0, 0.0]), (2, 5.0, 2.0, [1.0]), (1, 5.0, 2.0, [])],
)
def test_kuberay_steps_land_on_reconcile_ticks(
    steps: int, interval: float, tick: float, expected: list[float]
) -> None:
    assert kuberay_step_errors(steps, interval, tick) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ({"eventType": "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"}, "activitytaskscheduled"),
        ({"eventType": "ActivityTaskScheduled"}, "activitytaskscheduled"),
        ({"event_type": "TimerStarted"}, "timerstarted"),
    ],
)
def test_event_kinds_from_any_spelling(raw: dict[str, Any], kind: str) -> None:
    assert event_kind(raw) == kind


def test_actions_counted_from_a_synthetic_history() -> None:
    events = [
        {"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"},
        {"eventType": "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED"},
        {"eventType": "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"},
        {"eventType": "EVENT_TYPE_MARKER_RECORDED"},
        {"eventType": "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"},
        {
            "eventType": "EVENT_TYPE_ACTIVITY_TASK_STARTED",
            "activityTaskStartedEventAttributes": {"attempt": 3},
        },
        {"eventType": "EVENT_TYPE_ACTIVITY_TASK_COMPLETED"},
        {"eventType": "EVENT_TYPE_TIMER_STARTED"},
        {"eventType": "EVENT_TYPE_TIMER_FIRED"},
        {"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"},
        {"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"},
        {"eventType": "EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES"},
        {"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"},
    ]
    counted = count_actions(events)
    # start, marker, activity, timer, update, signal, upsert; the third attempt is two retries
    assert sum(counted.by_kind.values()) == 7
    assert counted.retries == 2
    assert counted.total == 9


def test_actions_of_a_recorded_history_match_its_billed_events() -> None:
    events = json.loads((HISTORIES / "rayjob_http_shutdown.json").read_text())["events"]
    counted = count_actions(events)
    kinds = [event_kind(event) for event in events]
    assert counted.by_kind["workflowexecutionstarted"] == 1
    assert counted.by_kind["timerstarted"] == kinds.count("timerstarted") >= 1  # the 60 s TTL at least
    assert counted.by_kind.get("activitytaskscheduled", 0) == kinds.count("activitytaskscheduled")
    assert counted.total < len(events)


def test_activity_spans_from_event_times_within_a_window() -> None:
    def event(event_id: int, kind: str, second: int, **attributes: Any) -> dict[str, Any]:
        return {
            "eventId": event_id,
            "eventType": kind,
            "eventTime": f"2026-01-01T00:00:{second:02d}.5Z",
            **attributes,
        }

    events = [
        event(
            1,
            "ActivityTaskScheduled",
            0,
            activityTaskScheduledEventAttributes={"activityType": {"name": "w"}},
        ),
        event(
            2,
            "ActivityTaskScheduled",
            1,
            activityTaskScheduledEventAttributes={"activityType": {"name": "x"}},
        ),
        event(3, "ActivityTaskCompleted", 11, activityTaskCompletedEventAttributes={"scheduledEventId": 1}),
        event(4, "TimerStarted", 20),
    ]
    spans = activity_spans(events)
    assert [(span.activity_type, span.seconds) for span in spans] == [("w", 11.0), ("x", 19.0)]
    since = parse_event_time("2026-01-01T00:00:05.5Z")
    clipped = activity_spans(events, since=since)
    assert [(span.activity_type, span.seconds) for span in clipped] == [("w", 6.0), ("x", 15.0)]


@pytest.mark.parametrize(
    ("seconds", "call", "throttle", "expected"),
    [
        (0.0, 2.0, 2.0, 0),
        (1.0, 2.0, 2.0, 1),
        (10.0, 2.0, 2.0, 6),
        (60.0, 10.0, 2.0, 7),
        (3600, 1.0, 24.0, 151),
    ],
)
def test_heartbeats_reaching_the_server_are_throttled(
    seconds: float, call: float, throttle: float, expected: int
) -> None:
    assert heartbeats_reaching_server(seconds, call, throttle) == expected


@pytest.mark.parametrize(
    ("timeout", "max_throttle", "default", "expected"),
    [
        (30.0, 60.0, 30.0, 24.0),  # temporalio's defaults: 0.8 x the heartbeat timeout
        (180.0, 60.0, 30.0, 60.0),  # capped by max_heartbeat_throttle_interval
        (30.0, 2.0, 2.0, 2.0),  # raypilot's worker caps it at 2 s
        (None, 60.0, 30.0, 30.0),  # no heartbeat timeout: the default throttle
    ],
)
def test_the_heartbeat_throttle_follows_the_heartbeat_timeout(
    timeout: float | None, max_throttle: float, default: float, expected: float
) -> None:
    assert heartbeat_throttle_s(timeout, max_throttle, default) == pytest.approx(expected)


def _idle_wait_history(activity: str, heartbeat_timeout: str, start_to_close: str) -> list[dict[str, Any]]:
    """One wait scheduled at midnight and still outstanding a day later (a timer closes the history)."""
    attributes = {
        "activityType": {"name": activity},
        "heartbeatTimeout": heartbeat_timeout,
        "startToCloseTimeout": start_to_close,
    }
    return [
        {
            "eventId": 1,
            "eventType": "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED",
            "eventTime": "2026-01-01T00:00:00Z",
            "activityTaskScheduledEventAttributes": attributes,
        },
        {"eventId": 2, "eventType": "EVENT_TYPE_TIMER_STARTED", "eventTime": "2026-01-02T00:00:00Z"},
    ]


@pytest.mark.parametrize(
    ("activity", "heartbeat_timeout", "start_to_close", "heartbeats", "actions"),
    [
        # The Serve wait of a run started before the patch (30 s heartbeat timeout): a third of it, 10 s (it
        # was at each 2 s poll: 43,201), and its 1 h attempts time out 24 times (each retry an action).
        ("dashboard.wait_serve", "30s", "3600s", 8_641, 2 + 24),
        # Now: once a third of its 3 min heartbeat timeout, 6 h attempts.
        ("dashboard.wait_serve", "180s", "21600s", 1_441, 2 + 4),
        # A Kubernetes watch heartbeats every 10 s from its background task (it was not counted at all).
        ("k8s.wait_raycluster", "30s", "3600s", 8_641, 2 + 24),
    ],
)
def test_a_day_of_one_idle_wait_costs_its_heartbeats_and_attempt_retries(
    activity: str, heartbeat_timeout: str, start_to_close: str, heartbeats: int, actions: int
) -> None:
    cost = cost_of(_idle_wait_history(activity, heartbeat_timeout, start_to_close))
    assert (cost.heartbeats, cost.actions) == (heartbeats, actions)


def test_heartbeat_call_periods_follow_the_activities() -> None:
    assert heartbeat_call_period_s("dashboard.wait_serve", 180.0) == 60.0
    assert heartbeat_call_period_s("temporal.wait_runs_closed", 180.0) == 60.0
    assert heartbeat_call_period_s("dashboard.wait_job", 30.0) == 2.0  # at each 2 s poll
    assert heartbeat_call_period_s("k8s.wait_head_pod", 30.0) == 10.0
    assert heartbeat_call_period_s("k8s.wait_head_pod", 6.0) == 2.0


def test_an_observer_run_bills_its_start_activity_idle_timer_and_each_watch_twice() -> None:
    # One watch: start, the watch signal (both from the signal-with-start), the activity, the unwatch signal,
    # the idle timer (the count the bench had as a constant of 5, with the completion in place of the watch
    # signal: the completion is not billed, the signal is).
    assert observer_run_actions(1) == 5
    # k watches share the start, the activity and the idle timer: each RayJob pays 2 + 3/k.
    assert observer_run_actions(10) == 23


@pytest.mark.parametrize(
    ("life", "period", "first_at_once", "expected"),
    [
        (0.0, 120.0, True, 0),
        # The Ray job observer of a 10 min job: 12 min with its idle time, a beat at once, then every 2 min.
        # The bench counted 600 // 120 = 5.
        (720.0, 120.0, True, 7),
        (720.0, 120.0, False, 6),
        # The Kubernetes observer of a RayCluster ready at once: its 2 min idle time.
        (120.0, 60.0, True, 3),
        (120.0, 120.0, False, 1),
        (119.0, 120.0, False, 0),
    ],
)
def test_observer_heartbeats_over_its_life(
    life: float, period: float, first_at_once: bool, expected: int
) -> None:
    assert observer_heartbeats(life, period, first_at_once=first_at_once) == expected


def _signal(name: str, at: str) -> dict[str, Any]:
    return {
        "eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED",
        "eventTime": at,
        "workflowExecutionSignaledEventAttributes": {"signalName": name},
    }


def test_the_observers_of_a_lone_rayjob_are_counted_in_full() -> None:
    """A RayJob alone in its namespace on a cluster of its own: both of its observers serve only it, so the
    bench adds both runs' billed events and heartbeats (before: the job observer's 5 actions and its
    heartbeats over 10 minutes; the Kubernetes observer not at all)."""
    events = [
        _signal("k8s_observed", "2026-01-01T00:00:00Z"),
        _signal("observed", "2026-01-01T00:00:01Z"),
        _signal("observed", "2026-01-01T00:00:02Z"),
        _signal("observed", "2026-01-01T00:10:01Z"),
    ]
    assert [moment.second for moment in signal_times(events, "observed")] == [1, 2, 1]
    cost = observers_cost(events)
    assert cost.events == 0  # their histories are not the RayJob's
    assert cost.actions == 2 * observer_run_actions(1)
    # Job observer: 10 min of job + 2 min idle; Kubernetes observer: 2 min idle.
    # Both beat every 6 s, the first after 6 s.
    period = OBSERVER_HEARTBEAT_SECONDS
    assert cost.heartbeats == observer_heartbeats(720.0, period, first_at_once=False) + observer_heartbeats(
        120.0, period, first_at_once=False
    )
    assert cost.heartbeats == 120 + 20


def test_without_observer_signals_no_observer_is_counted() -> None:
    assert observers_cost([{"eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED"}]).actions == 0


def test_event_times_with_nanoseconds_parse() -> None:
    moment = parse_event_time("2026-11-25T10:00:01.123456789Z")
    assert (moment.second, moment.microsecond, moment.utcoffset()) == (
        1,
        123456,
        parse_event_time("2026-11-25T10:00:00Z").utcoffset(),
    )


def test_table_and_record_show_each_verdict() -> None:
    figures = [
        Figure("P1", "a", "1", "2", "<= 1", True),
        Figure("P2", "b|c", "3", "4", "<= 1", False, ["why"]),
        Figure("P4b", "d", "5", "6", "report", None),
    ]
    table = markdown_table(figures)
    assert [line.rsplit("|", 2)[1].strip() for line in table.splitlines()[2:]] == ["met", "MISSED", "report"]
    assert "b/c" in table  # a cell cannot break the table
    recorded = record_text(figures, ["P1", "P2", "P4"], [1.0, 3.5], "")
    assert "load average 1.0-3.5" in recorded
    assert "- P2: why" in recorded


def test_progress_bar_text() -> None:
    assert bar_text("P7", 5, 10, 1.25) == "P7 [" + "#" * 15 + "." * 15 + "] 5/10 1.2 s"
    stream = io.StringIO()
    with Progress("x", 2, stream=stream) as bar:
        bar.advance(2)
    assert stream.getvalue().endswith("] 2/2 0.0 s\n")


@pytest.mark.parametrize(
    ("jobs", "requests", "slots", "met"),
    [
        (1, 2, 2, None),  # the smoke's single job: nothing to judge independence of N from
        (100, 2, 5, True),
        (100, 100, 5, False),  # a request per job: the waits grow with N
        (100, 2, 6, False),  # more slots than one Kubernetes observer and the job observers' shards
    ],
)
def test_own_cluster_verdict_needs_more_jobs_than_fixed_requests(
    jobs: int, requests: int, slots: int, met: bool | None
) -> None:
    point = OwnClusterPoint(
        jobs,
        ramp_s=1.0,
        rss_bytes=0,
        cpu_share=0.0,
        ramp_cluster_requests=requests,
        hold_api_rps=0.0,
        slots_used=slots,
    )
    assert own_clusters_met(point, slots_bound=5) is met


def test_p3k_counts_the_job_reads_of_a_dashboards_request_counter() -> None:
    exposition = dashboard_requests_exposition(
        Counter(
            {"GET /api/jobs/{job_id}": 7, "GET /api/jobs/": 2, "POST /api/jobs/": 3, "GET /api/version": 4}
        )
    )
    reads = job_reads_in("# TYPE ray_serve_num_ongoing_http_requests gauge\n" + exposition)
    assert reads == Counter({"/api/jobs/{job_id}": 7, "/api/jobs/": 2})
    assert job_reads_in("") == Counter()
