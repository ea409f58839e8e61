"""Drained deletion (raypilot.io/max-drain-seconds): the annotation read, and the verdict on each reading."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workflows.decisions.rayservice.drain import (
    MAX_DRAIN_ANNOTATION,
    Drain,
    DrainVerdict,
    decide_drain,
    max_drain_time,
)

STARTED = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
MAX = timedelta(seconds=120)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, None),  # KubeRay: delete at the delay
        ({}, None),
        ({MAX_DRAIN_ANNOTATION: "300"}, timedelta(seconds=300)),
        ({MAX_DRAIN_ANNOTATION: " 45 "}, timedelta(seconds=45)),
        ({MAX_DRAIN_ANNOTATION: "0"}, timedelta(0)),  # one reading, then delete whatever it says
        ({MAX_DRAIN_ANNOTATION: "-5"}, None),
        ({MAX_DRAIN_ANNOTATION: "2m"}, None),
        ({MAX_DRAIN_ANNOTATION: ""}, None),
        ({"raypilot.io/other": "300"}, None),
    ],
)
def test_max_drain_time_reads_a_non_negative_number_of_seconds(
    annotations: dict[str, str] | None, expected: timedelta | None
) -> None:
    assert max_drain_time(annotations) == expected


@pytest.mark.parametrize(
    ("quiet_before", "in_flight", "elapsed_s", "verdict", "quiet_after"),
    [
        (0, 3, 0, DrainVerdict.WAIT, 0),  # requests in flight
        (0, 0, 0, DrainVerdict.WAIT, 1),  # one zero may be a stale gauge (exported every 10 s)
        (1, 0, 6, DrainVerdict.WAIT, 2),  # two zeros 6 s apart may both be stale
        (2, 0, 12, DrainVerdict.DRAINED, 3),  # three zeros in a row span 12 s
        (2, 2, 12, DrainVerdict.WAIT, 0),  # a new request: count again
        (0, None, 6, DrainVerdict.WAIT, 0),  # no proxy answered: not known to be drained
        (0, 1, 119, DrainVerdict.WAIT, 0),
        (0, 1, 120, DrainVerdict.GIVE_UP, 0),  # the maximum drain time has passed
        (0, None, 500, DrainVerdict.GIVE_UP, 0),
        (2, 0, 120, DrainVerdict.DRAINED, 3),  # drained wins over giving up at the same reading
        (0, 0, 120, DrainVerdict.GIVE_UP, 1),
    ],
)
def test_drain_verdict_table(
    quiet_before: int, in_flight: int | None, elapsed_s: int, verdict: DrainVerdict, quiet_after: int
) -> None:
    now = STARTED + timedelta(seconds=elapsed_s)
    decided, drain = decide_drain(Drain(STARTED, quiet_before), in_flight, now, MAX)
    assert (decided, drain) == (verdict, Drain(STARTED, quiet_after))


def test_zero_maximum_deletes_after_one_reading_as_kuberay_would_at_the_delay() -> None:
    assert decide_drain(Drain(STARTED), 7, STARTED, timedelta(0))[0] == DrainVerdict.GIVE_UP
