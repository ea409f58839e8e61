"""S4: the Ray dashboard unreachable while a RayJob runs (the API server's service proxy answers 503, as it
does when the head does not answer), once for less than RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS and once for
longer.

Pass means no false failure within the timeout (the job completes once the dashboard is back), and after it
KubeRay's outcome: Failed, reason JobStatusCheckTimeoutExceeded, KubeRay's message.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from sandbox.faults import FaultRule
from tests.integration.rayjob_support import example
from tests.integration.stack import Stack
from tests.reliability.conftest import WorkerApi
from tests.reliability.figures import FULL, figure, sized
from tests.reliability.ledger import Ledger

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(600 if FULL else 120)]

# Full: the 60 s outage well inside the timeout; small: the same shape in seconds.
TIMEOUT_SECONDS = sized(8, 90)
SHORT_OUTAGE_SECONDS = sized(4, 60)
DASHBOARD_DOWN = FaultRule(resources=frozenset({"services/proxy"}), error_rate=1.0, status=503)


def running(status: dict[str, Any]) -> bool:
    return status.get("jobDeploymentStatus") == "Running" and status.get("jobStatus") == "RUNNING"


async def running_job(stack: Stack, name: str, seconds: int) -> Any:
    """An HTTPMode RayJob whose entrypoint sleeps `seconds`, once its Ray job runs: its workflow handle."""
    job = example("rayjob-httpmode", stack.namespace(), rename=name, entrypoint=f"sleep {seconds}")
    handle = await stack.start(job)
    await stack.wait_status(handle, running, within=60, what="the job running")
    return handle


@contextmanager
def dashboard_down(worker_api: WorkerApi) -> Iterator[None]:
    """The worker's dashboard requests (through the API server's service proxy) answered 503 in the block."""
    worker_api.set_faults([DASHBOARD_DOWN])
    try:
        yield
    finally:
        worker_api.clear_faults()


async def phases_until(stack: Stack, handle: Any, seconds: float) -> set[str]:
    """Every jobDeploymentStatus the `status` query shows during the next `seconds`."""
    seen: set[str] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.add(str((await stack.status(handle)).get("jobDeploymentStatus")))
        await asyncio.sleep(0.2)
    return seen


@pytest.fixture
def status_check_timeout(monkeypatch: pytest.MonkeyPatch) -> int:
    """The in-process worker reads KubeRay's variables from its environment when a workflow starts."""
    monkeypatch.setenv("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", str(TIMEOUT_SECONDS))
    return TIMEOUT_SECONDS


async def test_an_outage_shorter_than_the_timeout_is_no_failure(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger, status_check_timeout: int
) -> None:
    stack = reliability_stack
    recorded = figure("S4", f"dashboard down {SHORT_OUTAGE_SECONDS} s, timeout {status_check_timeout} s")
    handle = await running_job(stack, "outage-short", SHORT_OUTAGE_SECONDS + 6)
    with dashboard_down(worker_api):
        during = await phases_until(stack, handle, SHORT_OUTAGE_SECONDS)
    result = await handle.result()
    await ledger.record(handle)
    recorded.tried = 1
    survived = during == {"Running"} and (result["jobDeploymentStatus"], result["jobStatus"]) == (
        "Complete",
        "SUCCEEDED",
    )
    recorded.survived = int(survived)
    assert during == {"Running"}, f"phases during the outage: {during}"
    assert (result["jobDeploymentStatus"], result["jobStatus"]) == ("Complete", "SUCCEEDED"), result
    assert result.get("jobStatusCheckFailureStartTime") is None, "cleared by the first check that worked"


async def test_an_outage_past_the_timeout_fails_as_kuberay_does(
    reliability_stack: Stack, worker_api: WorkerApi, ledger: Ledger, status_check_timeout: int
) -> None:
    stack = reliability_stack
    recorded = figure("S4", f"dashboard down past the timeout ({status_check_timeout} s)")
    handle = await running_job(stack, "outage-long", 10 * status_check_timeout)
    with dashboard_down(worker_api):
        down_at = time.monotonic()
        result = await asyncio.wait_for(handle.result(), timeout=status_check_timeout + 60)
    failed_after = time.monotonic() - down_at
    await ledger.record(handle)
    recorded.tried = 1
    recorded.notes.append(f"Failed {failed_after:.1f} s after the dashboard went down")
    assert (result["jobDeploymentStatus"], result["reason"]) == ("Failed", "JobStatusCheckTimeoutExceeded")
    assert re.fullmatch(
        rf"Job status checks have been failing since \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d; "
        rf"exceeded timeout of {status_check_timeout}s",
        result["message"],
    ), result["message"]
    # The first failed check's time is kept in whole seconds, as a metav1.Time in KubeRay's status is, so
    # the deadline may come up to 1 s before `timeout` after that check (CI saw 7.99 s for 8 s).
    assert status_check_timeout - 1 <= failed_after <= status_check_timeout + 10, failed_after
    recorded.survived = 1
