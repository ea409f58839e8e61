"""The Temporal Schedule of a RayCronJob, decided from its spec and `raypilot.io/schedule` (pure).

The cron string is parsed here (robfig/cron's rules, as KubeRay) and handed to Temporal as calendar specs,
not as a cron string, so that Temporal fires exactly the minutes KubeRay would: robfig's day rule (with
neither day field a star, a day matches when EITHER matches) becomes two calendars whose union Temporal
fires. `@every` becomes an interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from models.cron import CronFields, EverySchedule, day_fields_either, parse_standard
from models.raycronjob import ConcurrencyPolicy, RayCronJob, ScheduleSettings

__all__ = [
    "DEFAULT_CATCHUP_WINDOW_SECONDS",
    "MIN_CATCHUP_WINDOW_SECONDS",
    "CalendarPlan",
    "SchedulePlan",
    "overlap_policy",
    "schedule_plan",
    "value_ranges",
]

# No startingDeadlineSeconds: every missed tick still runs after an outage (KubeRay fires each one), for up
# to Temporal's own default window.
DEFAULT_CATCHUP_WINDOW_SECONDS: Final = 365 * 24 * 3600
# Temporal refuses a shorter catch-up window.
MIN_CATCHUP_WINDOW_SECONDS: Final = 10
# Without spec.timeZone KubeRay uses the operator's local zone; a raypilot schedule runs on the Temporal
# server, so it uses UTC (the zone of an operator container unless TZ is set).
DEFAULT_TIME_ZONE: Final = "UTC"

# ScheduleOverlapPolicy names (temporalio.client) per concurrencyPolicy: what Temporal does with a tick while
# the tick workflow of an earlier run is still running (a tick workflow runs as long as its RayJob).
_OVERLAP: Final = {
    ConcurrencyPolicy.ALLOW: "ALLOW_ALL",
    ConcurrencyPolicy.FORBID: "SKIP",
    # The running tick is cancelled; on cancellation it deletes its RayJob, and the new tick starts once it
    # has closed.
    ConcurrencyPolicy.REPLACE: "CANCEL_OTHER",
    ConcurrencyPolicy.BUFFER_ONE: "BUFFER_ONE",
    ConcurrencyPolicy.BUFFER_ALL: "BUFFER_ALL",
}

Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CalendarPlan:
    """One Temporal calendar spec: inclusive (start, end) ranges per field; seconds are always 0."""

    minutes: Ranges
    hours: Ranges
    days_of_month: Ranges
    months: Ranges
    days_of_week: Ranges


@dataclass(frozen=True)
class SchedulePlan:
    calendars: tuple[CalendarPlan, ...]
    interval_seconds: int | None
    time_zone: str
    overlap: str
    catchup_window_seconds: int
    jitter_seconds: int
    paused: bool


def value_ranges(values: frozenset[int]) -> Ranges:
    """Sorted values as the fewest inclusive ranges: {0,1,2,5} -> ((0, 2), (5, 5))."""
    ranges: list[tuple[int, int]] = []
    for value in sorted(values):
        if ranges and ranges[-1][1] == value - 1:
            ranges[-1] = (ranges[-1][0], value)
        else:
            ranges.append((value, value))
    return tuple(ranges)


def _calendars(fields: CronFields) -> tuple[CalendarPlan, ...]:
    if not all((fields.minutes, fields.hours, fields.days_of_month, fields.months, fields.days_of_week)):
        return ()  # a field that matches nothing (robfig accepts "," as a field): the schedule never fires
    every_day = value_ranges(frozenset(range(1, 32)))
    every_weekday = value_ranges(frozenset(range(7)))

    def calendar(days_of_month: Ranges, days_of_week: Ranges) -> CalendarPlan:
        return CalendarPlan(
            value_ranges(fields.minutes),
            value_ranges(fields.hours),
            days_of_month,
            value_ranges(fields.months),
            days_of_week,
        )

    days_of_month, days_of_week = value_ranges(fields.days_of_month), value_ranges(fields.days_of_week)
    if day_fields_either(fields):
        return (calendar(days_of_month, every_weekday), calendar(every_day, days_of_week))
    return (calendar(days_of_month, days_of_week),)


def overlap_policy(policy: ConcurrencyPolicy) -> str:
    return _OVERLAP[policy]


def schedule_plan(cronjob: RayCronJob, settings: ScheduleSettings) -> SchedulePlan:
    """The schedule of a valid RayCronJob (validate_raycronjob first: a bad schedule raises CronError)."""
    parsed = parse_standard(cronjob.spec.schedule)
    deadline = settings.starting_deadline_seconds
    return SchedulePlan(
        calendars=_calendars(parsed) if isinstance(parsed, CronFields) else (),
        interval_seconds=parsed.seconds if isinstance(parsed, EverySchedule) else None,
        time_zone=cronjob.spec.time_zone or DEFAULT_TIME_ZONE,
        overlap=overlap_policy(settings.concurrency_policy),
        catchup_window_seconds=(
            DEFAULT_CATCHUP_WINDOW_SECONDS if deadline is None else max(MIN_CATCHUP_WINDOW_SECONDS, deadline)
        ),
        jitter_seconds=settings.jitter_seconds,
        paused=bool(cronjob.spec.suspend),
    )
