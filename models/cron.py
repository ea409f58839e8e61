"""Cron schedules as KubeRay reads them: robfig/cron v3's ParseStandard, with its error messages.

ParseStandard takes five fields (minute, hour, day of month, month, day of week), names for months and
weekdays (`jan`, `mon`, any case), `*` and `?`, ranges, steps and lists, and the descriptors `@yearly`,
`@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly` and `@every <Go duration>`.
KubeRay rejects `TZ=`/`CRON_TZ=` prefixes before parsing (a time zone goes in `spec.timeZone`), so they are
not handled here.

A parsed schedule keeps, per field, the set of values and whether the field was a plain `*` (robfig's
"star bit"): when neither the day of month nor the day of week is a star, a day matches if EITHER matches
(classic cron), otherwise both must.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from models.formats import parse_go_duration_seconds

__all__ = [
    "CronError",
    "CronFields",
    "EverySchedule",
    "ParsedSchedule",
    "day_fields_either",
    "parse_standard",
]


class CronError(ValueError):
    """What robfig/cron would answer for an unparsable schedule (str(error) is its message)."""


@dataclass(frozen=True)
class _Bounds:
    low: int
    high: int
    names: tuple[tuple[str, int], ...] = ()


_MINUTES: Final = _Bounds(0, 59)
_HOURS: Final = _Bounds(0, 23)
_DAYS_OF_MONTH: Final = _Bounds(1, 31)
_MONTHS: Final = _Bounds(
    1,
    12,
    tuple(
        (name, number)
        for number, name in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
        )
    ),
)
_DAYS_OF_WEEK: Final = _Bounds(
    0,
    6,
    tuple((name, number) for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))),
)


@dataclass(frozen=True)
class CronFields:
    """A calendar schedule: the values of each field (seconds are always 0 in a standard schedule) and
    whether the day fields were stars."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int]
    months: frozenset[int]
    days_of_week: frozenset[int]
    day_of_month_star: bool
    day_of_week_star: bool


@dataclass(frozen=True)
class EverySchedule:
    """`@every <duration>`: a fixed interval, in whole seconds (robfig rounds below 1 s up to 1 s and drops
    the fraction of a second)."""

    seconds: int


ParsedSchedule = CronFields | EverySchedule


def day_fields_either(fields: CronFields) -> bool:
    """robfig's dayMatches: with neither day field a star, a day matches when either field does."""
    return not fields.day_of_month_star and not fields.day_of_week_star


def _all(bounds: _Bounds) -> frozenset[int]:
    return frozenset(range(bounds.low, bounds.high + 1))


_DESCRIPTORS: Final[dict[str, CronFields]] = {
    "@yearly": CronFields(
        frozenset({0}), frozenset({0}), frozenset({1}), frozenset({1}), _all(_DAYS_OF_WEEK), False, True
    ),
    "@monthly": CronFields(
        frozenset({0}), frozenset({0}), frozenset({1}), _all(_MONTHS), _all(_DAYS_OF_WEEK), False, True
    ),
    "@weekly": CronFields(
        frozenset({0}), frozenset({0}), _all(_DAYS_OF_MONTH), _all(_MONTHS), frozenset({0}), True, False
    ),
    "@daily": CronFields(
        frozenset({0}), frozenset({0}), _all(_DAYS_OF_MONTH), _all(_MONTHS), _all(_DAYS_OF_WEEK), True, True
    ),
    "@hourly": CronFields(
        frozenset({0}), _all(_HOURS), _all(_DAYS_OF_MONTH), _all(_MONTHS), _all(_DAYS_OF_WEEK), True, True
    ),
}
_DESCRIPTORS["@annually"] = _DESCRIPTORS["@yearly"]
_DESCRIPTORS["@midnight"] = _DESCRIPTORS["@daily"]
_EVERY: Final = "@every "
_INT64_MAX: Final = 2**63 - 1


def parse_standard(spec: str) -> ParsedSchedule:
    """robfig/cron's ParseStandard (without time zone prefixes): the schedule, or CronError."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith("@"):
        return _descriptor(spec)
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    minutes, _ = _field(fields[0], _MINUTES)
    hours, _ = _field(fields[1], _HOURS)
    days_of_month, dom_star = _field(fields[2], _DAYS_OF_MONTH)
    months, _ = _field(fields[3], _MONTHS)
    days_of_week, dow_star = _field(fields[4], _DAYS_OF_WEEK)
    return CronFields(minutes, hours, days_of_month, months, days_of_week, dom_star, dow_star)


def _descriptor(spec: str) -> ParsedSchedule:
    if spec in _DESCRIPTORS:
        return _DESCRIPTORS[spec]
    if spec.startswith(_EVERY):
        text = spec[len(_EVERY) :]
        try:
            seconds = parse_go_duration_seconds(text)
        except ValueError as error:
            raise CronError(f"failed to parse duration {spec}: {error}") from None
        # robfig's Every: below one second is one second; the fraction of a second is dropped.
        return EverySchedule(max(1, int(seconds)))
    raise CronError(f"unrecognized descriptor: {spec}")


def _field(field: str, bounds: _Bounds) -> tuple[frozenset[int], bool]:
    """getField: a comma-separated list of ranges (empty items skipped, as strings.FieldsFunc does)."""
    values: set[int] = set()
    star = False
    for expression in (part for part in field.split(",") if part):
        found, expression_star = _range(expression, bounds)
        values |= found
        star = star or expression_star
    return frozenset(values), star


def _range(expression: str, bounds: _Bounds) -> tuple[frozenset[int], bool]:
    """getRange: `*`/`?` or number[-number], then an optional /step."""
    range_and_step = expression.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    star = False
    if low_and_high[0] in ("*", "?"):
        start, end, star = bounds.low, bounds.high, True
    else:
        start = _int_or_name(low_and_high[0], bounds)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds)
        else:
            raise CronError(f"too many hyphens: {expression}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _go_atoi_non_negative(range_and_step[1])
        if single:  # "N/step" means N through the maximum
            end = bounds.high
        if step > 1:
            star = False
    else:
        raise CronError(f"too many slashes: {expression}")
    if start < bounds.low:
        raise CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expression}")
    if end > bounds.high:
        raise CronError(f"end of range ({end}) above maximum ({bounds.high}): {expression}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expression}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expression}")
    return frozenset(range(start, end + 1, step)), star


def _int_or_name(text: str, bounds: _Bounds) -> int:
    for name, number in bounds.names:
        if text.lower() == name:
            return number
    return _go_atoi_non_negative(text)


_GO_INT: Final = re.compile(r"[+-]?[0-9]+")


def _go_atoi_non_negative(text: str) -> int:
    """mustParseInt: strconv.Atoi, then no negatives."""
    if not _GO_INT.fullmatch(text):
        raise CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    number = int(text)
    if not -_INT64_MAX - 1 <= number <= _INT64_MAX:
        raise CronError(
            f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": value out of range'
        )
    if number < 0:
        raise CronError(f"negative number ({number}) not allowed: {text}")
    return number
