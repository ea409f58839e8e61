"""How long the RayJob workflow waits, durably, after a failed act before it runs the step again (KubeRay
requeues)."""

from __future__ import annotations

from datetime import timedelta
from typing import Final

_BACKOFF_FIRST: Final = timedelta(seconds=10)


_BACKOFF_MAX: Final = timedelta(minutes=5)


def failure_backoff(consecutive_failures: int) -> timedelta:
    """How long to wait before trying again after a failed act (its activity exhausted its retries or was
    rejected for good): 10 s doubling to at most 5 min, as a controller's rate-limited requeue would."""
    if consecutive_failures <= 1:
        return _BACKOFF_FIRST
    delay: timedelta = _BACKOFF_FIRST * 2 ** min(consecutive_failures - 1, 10)
    return min(delay, _BACKOFF_MAX)
