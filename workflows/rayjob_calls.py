"""How the RayJob workflow calls activities: by name, with the timeouts and retries each kind needs.

- One-shot acts (create, get, delete, submit, stop, record an Event) run as *local* activities: each is one
  quick API call, and a local activity costs one history event instead of three plus a workflow task. They
  retry for up to `ACT_BUDGET`; after that (or on a permanent error) the workflow sees an `ActivityError`,
  records a Warning Event where KubeRay would, and tries again later.
- Waits are ordinary activities that heartbeat and return on change. They retry without limit (a retry adds
  no history event) and are cancelled by the workflow when it no longer needs them.

`result_type` None returns the plain JSON value (dicts, lists, booleans, None); dataclass results need it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

ACT_ATTEMPT_TIMEOUT: Final = timedelta(seconds=30)
ACT_BUDGET: Final = timedelta(minutes=2)
ACT_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(seconds=20)
)
EVENT_BUDGET: Final = timedelta(seconds=30)

# A wait lives as long as its attempt may (then it is retried, which costs no history); the heartbeat
# timeout lets a lost worker be noticed within a minute.
WAIT_ATTEMPT_TIMEOUT: Final = timedelta(hours=1)
WAIT_HEARTBEAT_TIMEOUT: Final = timedelta(seconds=30)
WAIT_RETRY: Final = RetryPolicy(
    initial_interval=timedelta(seconds=1), backoff_coefficient=2.0, maximum_interval=timedelta(seconds=30)
)


async def act(name: str, *args: Any, result_type: Any = None, budget: timedelta = ACT_BUDGET) -> Any:
    """One API call as a local activity (`args`: none or the activity's one input). Its failure is raised
    as an `ActivityError`, as an ordinary activity's is."""
    try:
        return await workflow.execute_local_activity(
            name,
            args=list(args),
            result_type=result_type,
            start_to_close_timeout=ACT_ATTEMPT_TIMEOUT,
            schedule_to_close_timeout=budget,
            retry_policy=ACT_RETRY,
            summary=name,
        )
    except (ApplicationError, ActivityTimeoutError) as failure:
        # A failed local activity reaches the workflow bare: the ApplicationError it raised (a permanent 4xx)
        # or the TimeoutError of its spent budget, not wrapped in an ActivityError (measured with temporalio
        # 1.35). Unwrapped, it would fail the whole workflow instead of the step that recovers from it.
        raise ActivityError(
            f"{name} failed",
            scheduled_event_id=0,
            started_event_id=0,
            identity="",
            activity_type=name,
            activity_id="",
            retry_state=None,
        ) from failure


async def act_remotely(name: str, *args: Any, result_type: Any = None) -> Any:
    """One API call as an ordinary activity: for the last act before the workflow completes, so that the
    workflow task that handled the request (e.g. the `delete` update) is not the one that completes it."""
    return await workflow.execute_activity(
        name,
        args=list(args),
        result_type=result_type,
        start_to_close_timeout=ACT_ATTEMPT_TIMEOUT,
        schedule_to_close_timeout=ACT_BUDGET,
        retry_policy=ACT_RETRY,
        summary=name,
    )


async def wait(name: str, arg: Any, result_type: Any = None, *, summary: str) -> Any:
    """One heartbeating wait that returns on change."""
    return await workflow.execute_activity(
        name,
        arg,
        result_type=result_type,
        start_to_close_timeout=WAIT_ATTEMPT_TIMEOUT,
        heartbeat_timeout=WAIT_HEARTBEAT_TIMEOUT,
        retry_policy=WAIT_RETRY,
        summary=summary,
    )
