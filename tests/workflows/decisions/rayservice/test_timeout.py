"""Go durations (ParseDuration / Duration.String) and the ray.io/initializing-timeout annotation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from models.meta import Condition, ConditionStatus
from workflows.decisions.rayservice.timeout import (
    format_go_duration,
    initializing_deadline,
    initializing_timeout,
    parse_go_duration,
)

NOW = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1.5s", timedelta(seconds=1.5)),
        (".5s", timedelta(milliseconds=500)),
        ("300ms", timedelta(milliseconds=300)),
        ("2us", timedelta(microseconds=2)),
        ("2\u00b5s", timedelta(microseconds=2)),
        ("1500ns", timedelta(microseconds=2)),  # below timedelta's resolution: rounded
        ("-5m", timedelta(minutes=-5)),
        ("+1h", timedelta(hours=1)),
        ("0", timedelta(0)),
    ],
)
def test_parse_go_duration(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize("text", ["", "300", "5x", "m", ".s", "1h-5m", "5 m", "-"])
def test_parse_go_duration_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="time: "):
        parse_go_duration(text)


@pytest.mark.parametrize(
    ("duration", "expected"),
    [
        (timedelta(0), "0s"),
        (timedelta(microseconds=1), "1\u00b5s"),
        (timedelta(microseconds=1500), "1.5ms"),
        (timedelta(seconds=45), "45s"),
        (timedelta(seconds=1, milliseconds=250), "1.25s"),
        (timedelta(minutes=30), "30m0s"),
        (timedelta(minutes=35, milliseconds=500), "35m0.5s"),
        (timedelta(hours=1), "1h0m0s"),
        (timedelta(hours=26, minutes=3, seconds=4), "26h3m4s"),
        (timedelta(seconds=-90), "-1m30s"),
    ],
)
def test_format_go_duration(duration: timedelta, expected: str) -> None:
    assert format_go_duration(duration) == expected


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        ("5m", timedelta(minutes=5)),
        ("300", timedelta(seconds=300)),  # integer seconds
        ("", None),
        ("invalid", None),  # validation rejects it earlier; here: no timeout
        (None, None),
    ],
)
def test_initializing_timeout(annotation: str | None, expected: timedelta | None) -> None:
    annotations = {} if annotation is None else {"ray.io/initializing-timeout": annotation}
    assert initializing_timeout(annotations) == expected


@pytest.mark.parametrize(
    ("ready_status", "reason", "expected"),
    [
        (ConditionStatus.FALSE, "Initializing", NOW + timedelta(minutes=5)),
        (ConditionStatus.FALSE, "ZeroServeEndpoints", None),  # only the first bring-up times out
        (ConditionStatus.TRUE, "NonZeroServeEndpoints", None),
    ],
)
def test_initializing_deadline(ready_status: ConditionStatus, reason: str, expected: datetime | None) -> None:
    conditions = [Condition(type="Ready", status=ready_status, reason=reason, last_transition_time=NOW)]
    assert initializing_deadline(conditions, {"ray.io/initializing-timeout": "5m"}) == expected
    assert initializing_deadline(conditions, {}) is None
