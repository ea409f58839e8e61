"""The `ray.io/initializing-timeout` annotation: parsing it, when it fires, and what KubeRay then says.

KubeRay counterparts (rayservice_controller.go): getInitializingTimeout (Go duration first, then integer
seconds), markFailedOnInitializingTimeout (Ready False/Initializing for at least the timeout -> Ready
False/InitializingTimeout, Warning event RayServiceInitializingTimeout). Durations in messages are written the
way Go's time.Duration.String writes them ("30m0s", "35m0.5s").

Where raypilot differs: KubeRay notices the timeout at its next 2 s poll; `initializing_deadline` gives the
exact instant so the workflow can arm one durable timer instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from models.formats import parse_go_duration_seconds
from models.meta import Condition, ConditionStatus, find_condition
from models.rayservice import RayServiceConditionReason, RayServiceConditionType
from models.validation.rayservice import initializing_timeout_seconds

__all__ = [
    "InitializingTimeoutOutcome",
    "format_go_duration",
    "initializing_deadline",
    "initializing_timeout",
    "initializing_timeout_outcome",
    "parse_go_duration",
]


def parse_go_duration(text: str) -> timedelta:
    """Go's time.ParseDuration ("5m", "1h30m", "1.5s", "-2m", "0") as a timedelta; ValueError when Go would
    fail (parsing is models.formats'). Sub-microsecond parts are rounded (timedelta's
    resolution)."""
    return timedelta(seconds=parse_go_duration_seconds(text))


def _fraction(nanos: int, digits: int) -> str:
    # The fractional part of nanos / 10**digits without trailing zeros, "" when zero.
    remainder = nanos % 10**digits
    if remainder == 0:
        return ""
    return "." + f"{remainder:0{digits}d}".rstrip("0")


def format_go_duration(duration: timedelta) -> str:
    """Go's time.Duration.String: "0s", "1.5ms", "45s", "30m0s", "1h0m0s", "35m0.25s"."""
    nanos = (duration.days * 86_400 + duration.seconds) * 1_000_000_000 + duration.microseconds * 1_000
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{nanos // 1_000}{_fraction(nanos, 3)}\u00b5s"
    if nanos < 1_000_000_000:
        return f"{sign}{nanos // 1_000_000}{_fraction(nanos, 6)}ms"
    seconds_text = f"{(nanos // 1_000_000_000) % 60}{_fraction(nanos, 9)}s"
    total_minutes = nanos // (60 * 1_000_000_000)
    if total_minutes == 0:
        return sign + seconds_text
    hours, minutes = divmod(total_minutes, 60)
    if hours == 0:
        return f"{sign}{minutes}m{seconds_text}"
    return f"{sign}{hours}h{minutes}m{seconds_text}"


def initializing_timeout(annotations: Mapping[str, str]) -> timedelta | None:
    """getInitializingTimeout: the annotation as a Go duration, else as integer seconds; None when absent or
    not a positive value (validation rejects those before any workflow sees them)."""
    seconds = initializing_timeout_seconds(annotations)
    return None if seconds is None else timedelta(seconds=seconds)


def _initializing_since(conditions: Sequence[Condition]) -> datetime | None:
    ready = find_condition(list(conditions), RayServiceConditionType.READY)
    if ready is None or ready.status != ConditionStatus.FALSE:
        return None
    if ready.reason != RayServiceConditionReason.INITIALIZING:
        return None
    return ready.last_transition_time


def initializing_deadline(conditions: Sequence[Condition], annotations: Mapping[str, str]) -> datetime | None:
    """When the initializing timeout fires: Ready's lastTransitionTime + timeout while Ready is
    False/Initializing; None when there is no timeout or the RayService is not initializing."""
    timeout = initializing_timeout(annotations)
    since = _initializing_since(conditions)
    if timeout is None or since is None:
        return None
    return since + timeout


@dataclass(frozen=True)
class InitializingTimeoutOutcome:
    """What markFailedOnInitializingTimeout writes: the Ready message and the Warning event message."""

    timeout: timedelta
    time_spent: timedelta
    condition_message: str
    event_message: str


def initializing_timeout_outcome(
    conditions: Sequence[Condition], annotations: Mapping[str, str], now: datetime
) -> InitializingTimeoutOutcome | None:
    """markFailedOnInitializingTimeout's decision: None unless a timeout is configured, Ready is
    False/Initializing and at least the timeout has passed since Ready's lastTransitionTime."""
    timeout = initializing_timeout(annotations)
    since = _initializing_since(conditions)
    if timeout is None or since is None:
        return None
    time_spent = now - since
    if time_spent < timeout:
        return None
    timeout_text, spent_text = format_go_duration(timeout), format_go_duration(time_spent)
    return InitializingTimeoutOutcome(
        timeout=timeout,
        time_spent=time_spent,
        condition_message=(
            f"RayService failed to become ready within the configured timeout of {timeout_text}. "
            f"Time spent initializing: {spent_text}"
        ),
        event_message=(
            f"RayService initializing timeout exceeded after {spent_text} "
            f"(configured timeout: {timeout_text})"
        ),
    )
