"""robfig/cron v3 ParseStandard as KubeRay uses it: what parses to which minutes and days, and every error
with robfig's own message."""

from __future__ import annotations

import pytest

from models.cron import CronError, CronFields, EverySchedule, day_fields_either, parse_standard


def _fields(spec: str) -> CronFields:
    parsed = parse_standard(spec)
    assert isinstance(parsed, CronFields)
    return parsed


@pytest.mark.parametrize(
    ("spec", "minutes", "hours", "days_of_month", "months", "days_of_week"),
    [
        ("* * * * *", set(range(60)), set(range(24)), set(range(1, 32)), set(range(1, 13)), set(range(7))),
        ("45 21 * * *", {45}, {21}, set(range(1, 32)), set(range(1, 13)), set(range(7))),
        (
            "*/15 9-17 * * mon-fri",
            {0, 15, 30, 45},
            set(range(9, 18)),
            set(range(1, 32)),
            set(range(1, 13)),
            {1, 2, 3, 4, 5},
        ),
        ("5/20 0 1,15 JAN,jul ?", {5, 25, 45}, {0}, {1, 15}, {1, 7}, set(range(7))),
        ("0 0 1-10/3 * SUN", {0}, {0}, {1, 4, 7, 10}, set(range(1, 13)), {0}),
        ("0 0 1,,2 * *", {0}, {0}, {1, 2}, set(range(1, 13)), set(range(7))),  # empty items are skipped
        ("  0   0  *  *  *  ", {0}, {0}, set(range(1, 32)), set(range(1, 13)), set(range(7))),
        ("@hourly", {0}, set(range(24)), set(range(1, 32)), set(range(1, 13)), set(range(7))),
        ("@daily", {0}, {0}, set(range(1, 32)), set(range(1, 13)), set(range(7))),
        ("@midnight", {0}, {0}, set(range(1, 32)), set(range(1, 13)), set(range(7))),
        ("@weekly", {0}, {0}, set(range(1, 32)), set(range(1, 13)), {0}),
        ("@monthly", {0}, {0}, {1}, set(range(1, 13)), set(range(7))),
        ("@yearly", {0}, {0}, {1}, {1}, set(range(7))),
        ("@annually", {0}, {0}, {1}, {1}, set(range(7))),
    ],
)
def test_schedules_parse_to_robfigs_values(
    spec: str,
    minutes: set[int],
    hours: set[int],
    days_of_month: set[int],
    months: set[int],
    days_of_week: set[int],
) -> None:
    fields = _fields(spec)
    assert (fields.minutes, fields.hours, fields.days_of_month, fields.months, fields.days_of_week) == (
        minutes,
        hours,
        days_of_month,
        months,
        days_of_week,
    )


@pytest.mark.parametrize(
    ("spec", "either"),
    [
        ("0 0 1 * 1", True),  # classic cron: the 1st of the month OR a Monday
        ("0 0 1-31 * 1", True),  # a full range is not a star
        ("0 0 * * 1", False),
        ("0 0 1 * *", False),
        ("0 0 */1 * 1", False),  # */1 keeps the star
        ("0 0 */2 * 1", True),  # a step above 1 drops it
        ("0 0 ? * 1", False),
        ("@weekly", False),
        ("@monthly", False),
    ],
)
def test_day_of_month_and_week_match_either_only_without_a_star(spec: str, either: bool) -> None:
    assert day_fields_either(_fields(spec)) is either


@pytest.mark.parametrize(
    ("spec", "seconds"),
    [
        ("@every 1h30m", 5400),
        ("@every 90s", 90),
        ("@every 1.5s", 1),
        ("@every 500ms", 1),
        ("@every 0", 1),
        ("@every 2m0.9s", 120),
        ("@every -5s", 1),
    ],
)
def test_every_is_an_interval_of_whole_seconds(spec: str, seconds: int) -> None:
    assert parse_standard(spec) == EverySchedule(seconds)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("0 * * * * *", "expected exactly 5 fields, found 6: [0 * * * * *]"),
        (" @hourly", "expected exactly 5 fields, found 1: [@hourly]"),
        ("@hourly ", "unrecognized descriptor: @hourly "),
        ("@reboot", "unrecognized descriptor: @reboot"),
        ("@every 1d", 'failed to parse duration @every 1d: time: unknown unit "d" in duration "1d"'),
        ("@every 5", 'failed to parse duration @every 5: time: missing unit in duration "5"'),
        ("@every ", 'failed to parse duration @every : time: invalid duration ""'),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* 24 * * *", "end of range (24) above maximum (23): 24"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * 13 *", "end of range (13) above maximum (12): 13"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("*/2/3 * * * *", "too many slashes: */2/3"),
        ("a * * * *", 'failed to parse int from a: strconv.Atoi: parsing "a": invalid syntax'),
        ("-1 * * * *", 'failed to parse int from : strconv.Atoi: parsing "": invalid syntax'),
        ("*/-2 * * * *", "negative number (-2) not allowed: -2"),
        ("* * * foo *", 'failed to parse int from foo: strconv.Atoi: parsing "foo": invalid syntax'),
        (
            "99999999999999999999 * * * *",
            "failed to parse int from 99999999999999999999: strconv.Atoi: "
            'parsing "99999999999999999999": value out of range',
        ),
    ],
)
def test_unparsable_schedules_give_robfigs_message(spec: str, message: str) -> None:
    with pytest.raises(CronError) as raised:
        parse_standard(spec)
    assert str(raised.value) == message
