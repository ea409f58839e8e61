"""`takes_observed_view`: which observed view replaces the answer a RayJob holds (a direct look's or an
earlier view's), by the view's age against that answer and the Ray job's forward-only status."""

from __future__ import annotations

import pytest

from wire.dashboard import JobInfoAnswer
from wire.observer import takes_observed_view

NOT_FOUND = JobInfoAnswer("not_found")
UNAVAILABLE = JobInfoAnswer("unavailable", error="GetJobInfo fail: timeout")
PENDING = JobInfoAnswer("found", status="PENDING", message="Job has not started yet.")
RUNNING = JobInfoAnswer("found", status="RUNNING", message="Job is currently running.")
RUNNING_AGAIN = JobInfoAnswer("found", status="RUNNING", message="Job is still running: 3 tasks left.")
SUCCEEDED = JobInfoAnswer("found", status="SUCCEEDED", message="Job finished successfully.")
FAILED = JobInfoAnswer("found", status="FAILED", message="Job entrypoint command failed.")


@pytest.mark.parametrize(
    ("answer", "view", "newer", "takes"),
    [
        # A newer view is news, unless it moves a found job back.
        (NOT_FOUND, PENDING, True, True),
        (RUNNING, SUCCEEDED, True, True),
        (RUNNING, RUNNING_AGAIN, True, True),
        (RUNNING, UNAVAILABLE, True, True),
        (RUNNING, NOT_FOUND, True, True),  # the job is gone (e.g. its cluster was re-created)
        (UNAVAILABLE, RUNNING, True, True),
        (SUCCEEDED, RUNNING, True, False),  # listed before the look that saw it end
        (RUNNING, PENDING, True, False),
        (RUNNING, RUNNING, True, False),  # nothing changed
        # A view held while a direct look answered counts only when it moves the job forward.
        (RUNNING, NOT_FOUND, False, False),  # the pre-submission list: the flaky K8sJobMode failure
        (RUNNING, UNAVAILABLE, False, False),
        (SUCCEEDED, RUNNING, False, False),
        (RUNNING, RUNNING_AGAIN, False, False),
        (RUNNING, FAILED, False, True),
        (PENDING, RUNNING, False, True),
        (UNAVAILABLE, RUNNING, False, True),  # the look failed; the job was seen running
        (NOT_FOUND, PENDING, False, True),
        (UNAVAILABLE, NOT_FOUND, False, False),
    ],
)
def test_takes_observed_view(answer: JobInfoAnswer, view: JobInfoAnswer, newer: bool, takes: bool) -> None:
    assert takes_observed_view(answer, view, newer=newer) is takes
