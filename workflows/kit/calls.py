"""Calling activities: by their declaration (`wire.stubs`), with the policy of the kind of I/O the call is.

    await call(stubs.get_raycluster, ObjectKey(namespace, name), IO.STEP)

mypy checks the argument and the result against the declaration, and Temporal decodes the result into
the declared result type. The table below is the only place timeouts and retries are chosen. Why each kind
differs:

- STEP: a one-shot act of the RayJob workflow (create, get, delete, submit, stop). The RayJob loop recovers
  from a failed act itself (a Warning Event, a durable backoff, the step again, deadlines still checked), as
  KubeRay requeues, so the act gets a short budget. It runs as a *local* activity: one marker event instead
  of three events and a workflow task, which matters for the many short acts of a job's life.
- EVENT: a Kubernetes Event, best effort as KubeRay's recorder: a local activity with a 30 s budget.
- LAST_STEP: the act just before a workflow completes (RayJob `delete`): a STEP's budget, but as an ordinary
  activity so that the workflow task that handled the request is not the one that completes the workflow.
- RECONCILE: a one-shot act of a RayService pass. A pass has no per-act recovery, so a transient failure (an
  unreachable API server) stalls it and is retried without limit; permanent errors end the retries through
  the activities' classification (non-retryable). Unlimited retries need an ordinary activity (a local one
  must stay short).
- CONFIG: reading the worker's operator configuration once per RayService run (local, 10 s per attempt).
- WAIT: a heartbeating wait of the RayJob workflow that returns on change. An attempt may last an hour and is
  retried without limit (a retry adds no history event); a lost worker is noticed within the heartbeat
  timeout. Cancelled waits are not awaited (the RayJob loop moves on at once).
- WATCH: the same for the RayService workflow, with two differences: a cancelled watch is confirmed before
  the run continues as new (not before it completes: see RayServiceWorkflow.run), and `NotFoundError` (a
  worker that does not run that wait activity) is not retried: the workflow falls back.
- QUIET_WATCH: a wait kept for days while nothing changes: the RayService's Serve health wait
  (dashboard.wait_serve), the one wait an idle RayService keeps, and the admission workflow's wait for a
  holder's run to close. Each heartbeat that reaches the server is a billable action (the Serve wait's every
  2 s were ~43,000 a day), so it heartbeats once a minute; what it watches it still polls often
  (the Serve wait every 2 s), so a change returns at once. A crashed worker is noticed within 3 minutes
  (WATCH: 30 s), and a cancellation reaches the wait within a minute. 6 h attempts: an attempt's timeout is
  a retry, an action.
- OBSERVE: the cluster observer's one long-lived activity (workflows/observer): an hour per attempt,
  retried without limit; it heartbeats every 6 s and times out after 20 s without one
  (`wire.observer.OBSERVER_LOST_AFTER`), so a killed worker's observer moves to another worker within
  seconds though none starts (each heartbeat is billable; P4b); a starting worker restarts them at once.
- ANALYSIS: one run of a measured analysis gate (raypilot.io/rollout: an HTTP probe over its window, a
  Prometheus query). A probe window may last minutes, so a long attempt with a heartbeat per sample; a
  failed measurement is a result, not an error, so what raises is infrastructure: retried without limit.
- NOTIFY: a webhook notification of `raypilot.io/notify` (activities/notify.py): at-least-once, so an ordinary
  activity retried with a growing backoff for up to an hour (schedule-to-close) while the receiver is down
  or answers 5xx/408/429; a 4xx means it never will, and the activity fails for good. Short attempts: a
  webhook answers in seconds or not at all. The workflow sends in the background (workflows/kit/notify.py),
  so a slow webhook never holds its loop.
- RANKS_READ: reading Serve replica ranks runs a short Ray job (a driver start: seconds); a few tries, then
  the status goes without ranks.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Final, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

from wire.observer import OBSERVER_LOST_AFTER
from wire.stubs.common import Activity, ActivityWithoutInput

Arg = TypeVar("Arg")
Result = TypeVar("Result")


class IO(enum.Enum):
    STEP = "step"
    EVENT = "event"
    LAST_STEP = "last step"
    RECONCILE = "reconcile"
    CONFIG = "config"
    WAIT = "wait"
    WATCH = "watch"
    QUIET_WATCH = "quiet watch"
    RANKS_READ = "ranks read"
    ANALYSIS = "analysis"
    OBSERVE = "observe"
    NOTIFY = "notify"


@dataclass(frozen=True)
class CallPolicy:
    local: bool
    start_to_close: timedelta
    retry: RetryPolicy | None = None
    schedule_to_close: timedelta | None = None
    heartbeat: timedelta | None = None
    # WAIT_CANCELLATION_COMPLETED: a cancelled call resolves only once its cancellation is recorded.
    confirm_cancel: bool = False


_STEP_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(seconds=20)
)
_WAIT_ATTEMPT: Final = timedelta(hours=1)
# A RayService watch: a worker without the wait activity (NotFoundError) is not asked again.
_WATCH_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=60),
    non_retryable_error_types=["NotFoundError"],
)
_WAIT_HEARTBEAT: Final = timedelta(seconds=30)
# Quiet watches heartbeat every third of this (activities/heartbeat.py: quiet_heartbeat_interval).
QUIET_WATCH_HEARTBEAT: Final = timedelta(minutes=3)

_STEP: Final = CallPolicy(
    local=True,
    start_to_close=timedelta(seconds=30),
    schedule_to_close=timedelta(minutes=2),
    retry=_STEP_RETRY,
)

POLICIES: Final[Mapping[IO, CallPolicy]] = {
    IO.STEP: _STEP,
    IO.EVENT: CallPolicy(
        local=True,
        start_to_close=timedelta(seconds=30),
        schedule_to_close=timedelta(seconds=30),
        retry=_STEP_RETRY,
    ),
    IO.LAST_STEP: replace(_STEP, local=False),
    IO.RECONCILE: CallPolicy(
        local=False,
        start_to_close=timedelta(seconds=60),
        retry=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)),
    ),
    IO.CONFIG: CallPolicy(local=True, start_to_close=timedelta(seconds=10)),
    IO.WAIT: CallPolicy(
        local=False,
        start_to_close=_WAIT_ATTEMPT,
        heartbeat=_WAIT_HEARTBEAT,
        retry=RetryPolicy(
            initial_interval=timedelta(seconds=1),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(seconds=30),
        ),
    ),
    IO.WATCH: CallPolicy(
        local=False,
        start_to_close=_WAIT_ATTEMPT,
        heartbeat=_WAIT_HEARTBEAT,
        retry=_WATCH_RETRY,
        confirm_cancel=True,
    ),
    IO.QUIET_WATCH: CallPolicy(
        local=False,
        start_to_close=timedelta(hours=6),
        heartbeat=QUIET_WATCH_HEARTBEAT,
        retry=_WATCH_RETRY,
        confirm_cancel=True,
    ),
    IO.OBSERVE: CallPolicy(
        local=False,
        start_to_close=_WAIT_ATTEMPT,
        heartbeat=OBSERVER_LOST_AFTER,
        retry=RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30)),
    ),
    IO.ANALYSIS: CallPolicy(
        local=False,
        start_to_close=timedelta(minutes=30),
        heartbeat=_WAIT_HEARTBEAT,
        retry=RetryPolicy(initial_interval=timedelta(seconds=2), maximum_interval=timedelta(seconds=60)),
    ),
    IO.NOTIFY: CallPolicy(
        local=False,
        start_to_close=timedelta(seconds=30),
        schedule_to_close=timedelta(hours=1),
        retry=RetryPolicy(
            initial_interval=timedelta(seconds=2),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(minutes=5),
        ),
    ),
    IO.RANKS_READ: CallPolicy(
        local=False,
        start_to_close=timedelta(minutes=3),
        heartbeat=_WAIT_HEARTBEAT,
        retry=RetryPolicy(
            initial_interval=timedelta(seconds=2), maximum_interval=timedelta(seconds=20), maximum_attempts=5
        ),
        confirm_cancel=True,
    ),
}


async def call(declared: Activity[Arg, Result], arg: Arg, io: IO, *, summary: str | None = None) -> Result:
    """Runs the declared activity with `arg` under the policy of `io` and returns its result. A failure is
    raised as an `ActivityError`, also for a local activity (which Temporal raises bare)."""
    policy = POLICIES[io]
    if not policy.local:
        return await start(declared, arg, io, summary=summary or declared.name)
    result: Result = await _local(declared, [arg], policy, summary or declared.name)
    return result


async def call_without_input(declared: ActivityWithoutInput[Result], io: IO) -> Result:
    """`call` for an activity that takes no argument (the operator configuration)."""
    policy = POLICIES[io]
    if not policy.local:
        raise ValueError(f"{io} is not a local call")
    result: Result = await _local(declared, [], policy, declared.name)
    return result


async def _local(
    declared: Activity[Any, Any] | ActivityWithoutInput[Any],
    args: list[Any],
    policy: CallPolicy,
    summary: str,
) -> Any:
    try:
        return await workflow.execute_local_activity(
            declared.name,
            args=args,
            result_type=declared.result_type,
            start_to_close_timeout=policy.start_to_close,
            schedule_to_close_timeout=policy.schedule_to_close,
            retry_policy=policy.retry,
            summary=summary,
        )
    except (ApplicationError, ActivityTimeoutError) as failure:
        # A failed local activity reaches the workflow bare: the ApplicationError it raised (a permanent 4xx)
        # or the TimeoutError of its spent budget, not wrapped in an ActivityError (measured with temporalio
        # 1.35). Unwrapped, it would fail the whole workflow instead of the step that recovers from it.
        raise _as_activity_error(declared.name, failure) from failure


def start(
    declared: Activity[Arg, Result], arg: Arg, io: IO, *, summary: str
) -> workflow.ActivityHandle[Result]:
    """Starts the declared activity as an ordinary activity (waits and watches, which a workflow races and
    cancels) and returns its handle."""
    policy = POLICIES[io]
    if policy.local:
        raise ValueError(f"{io} runs as a local activity: use call()")
    handle: workflow.ActivityHandle[Result] = workflow.start_activity(
        declared.name,
        arg,
        result_type=declared.result_type,
        start_to_close_timeout=policy.start_to_close,
        schedule_to_close_timeout=policy.schedule_to_close,
        heartbeat_timeout=policy.heartbeat,
        retry_policy=policy.retry,
        summary=summary,
        cancellation_type=(
            workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
            if policy.confirm_cancel
            else workflow.ActivityCancellationType.TRY_CANCEL
        ),
    )
    return handle


def _as_activity_error(name: str, failure: BaseException) -> ActivityError:
    return ActivityError(
        f"{name} failed",
        scheduled_event_id=0,
        started_event_id=0,
        identity="",
        activity_type=name,
        activity_id="",
        retry_state=None,
    )
