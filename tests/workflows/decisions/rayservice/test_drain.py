"""Drained deletion (on by default, raypilot.io/max-drain-seconds bounds it, "0" turns it off): the annotation
read, and the verdict on each reading."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from workflows.decisions.rayservice.drain import (
    DEFAULT_MAX_DRAIN,
    MAX_DRAIN_ANNOTATION,
    Drain,
    DrainVerdict,
    decide_drain,
    drain_deadline,
    held_drains_due,
    max_drain_time,
    next_drain_read,
)

STARTED = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)
MAX = timedelta(seconds=120)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, DEFAULT_MAX_DRAIN),  # drained by default: KubeRay's deletion at the delay loses requests
        ({}, DEFAULT_MAX_DRAIN),
        ({"raypilot.io/other": "300"}, DEFAULT_MAX_DRAIN),
        ({MAX_DRAIN_ANNOTATION: "0"}, None),  # KubeRay's behaviour: deleted at the delay, nothing read
        ({MAX_DRAIN_ANNOTATION: " 0 "}, None),
        ({MAX_DRAIN_ANNOTATION: "00"}, None),
        ({MAX_DRAIN_ANNOTATION: "300"}, timedelta(seconds=300)),
        ({MAX_DRAIN_ANNOTATION: " 45 "}, timedelta(seconds=45)),
        ({MAX_DRAIN_ANNOTATION: "1"}, timedelta(seconds=1)),
        # Rejected with the manifest; were one to reach a run, it would drain by default.
        ({MAX_DRAIN_ANNOTATION: "-5"}, DEFAULT_MAX_DRAIN),
        ({MAX_DRAIN_ANNOTATION: "2m"}, DEFAULT_MAX_DRAIN),
        ({MAX_DRAIN_ANNOTATION: ""}, DEFAULT_MAX_DRAIN),
        ({MAX_DRAIN_ANNOTATION: "\u00b2"}, DEFAULT_MAX_DRAIN),  # a digit to str.isdigit, not to int
    ],
)
def test_max_drain_time_is_the_default_unless_the_annotation_sets_it(
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


def test_a_one_second_maximum_gives_up_at_the_first_reading_after_it() -> None:
    one = timedelta(seconds=1)
    assert decide_drain(Drain(STARTED), 7, STARTED, one)[0] == DrainVerdict.WAIT
    assert decide_drain(Drain(STARTED), 7, STARTED + one, one)[0] == DrainVerdict.GIVE_UP


@pytest.mark.parametrize(
    ("elapsed_s", "wait_reports", "read_at_s"),
    [
        (6, True, 120),  # the drain wait reports every reading that counts: the pass reads at the deadline
        (100, True, 120),
        (6, False, 12),  # runs before the waits, or a failed drain wait: read again DRAIN_POLL (6 s) on
        (100, False, 106),
    ],
)
def test_next_drain_read_table(elapsed_s: int, wait_reports: bool, read_at_s: int) -> None:
    now = STARTED + timedelta(seconds=elapsed_s)
    assert next_drain_read(Drain(STARTED, 1), MAX, now, wait_reports) == STARTED + timedelta(
        seconds=read_at_s
    )
    assert drain_deadline(Drain(STARTED, 2), MAX) == STARTED + MAX


LATER = STARTED + timedelta(seconds=300)


@pytest.mark.parametrize(
    ("max_drain_s", "elapsed_s", "due", "still"),
    [
        # A draining cluster is held until its deadline under the annotation as it is now; another
        # scheduled cluster keeps its deletion time.
        (120, 30, [], {"draining": STARTED + MAX, "other": LATER}),
        (120, 120, ["draining"], {"other": LATER}),  # the maximum drain time passed: its last reading
        (60, 30, [], {"draining": STARTED + timedelta(seconds=60), "other": LATER}),  # shortened
        (20, 30, ["draining"], {"other": LATER}),  # shortened below what already passed
        (None, 30, ["draining"], {"other": LATER}),  # turned off ("0"): delete at the delay, as KubeRay
        (120, 300, ["draining", "other"], {}),
    ],
)
def test_held_drains_due_table(
    max_drain_s: int | None, elapsed_s: int, due: list[str], still: dict[str, datetime]
) -> None:
    held = {"draining": STARTED + timedelta(seconds=12), "other": LATER}  # the times stored before
    drains = {"draining": Drain(STARTED, 1)}
    max_drain = None if max_drain_s is None else timedelta(seconds=max_drain_s)
    now = STARTED + timedelta(seconds=elapsed_s)
    assert held_drains_due(held, drains, max_drain, now) == (due, still)


@pytest.mark.parametrize(
    ("stored_s", "elapsed_s", "due", "held_until_s"),
    [
        (120, 30, False, 36),  # held for a wait that failed: the next reading DRAIN_POLL from now
        (36, 33, False, 36),  # polled: its next reading stays
        (36, 36, True, None),
        (120, 118, False, 120),  # never past the drain deadline
        (120, 120, True, None),
    ],
)
def test_a_cluster_whose_drain_wait_failed_is_polled(
    stored_s: int, elapsed_s: int, due: bool, held_until_s: int | None
) -> None:
    held = {"draining": STARTED + timedelta(seconds=stored_s)}
    now = STARTED + timedelta(seconds=elapsed_s)
    found_due, still = held_drains_due(held, {"draining": Drain(STARTED)}, MAX, now, polled=["draining"])
    assert found_due == (["draining"] if due else [])
    assert still == ({} if held_until_s is None else {"draining": STARTED + timedelta(seconds=held_until_s)})
