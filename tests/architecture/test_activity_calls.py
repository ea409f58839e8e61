"""Workflows call activities only through the kit and the declarations of `wire.stubs`, and the kit's
policies keep the rules that make each kind of I/O safe."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workflows.kit.calls import IO, POLICIES

REPO = Path(__file__).resolve().parents[2]
# Ways to reach an activity without its declaration and the policy table.
BYPASSES = re.compile(r"(execute|start)_(local_)?activity|wire\.names|wire import names")


def test_workflows_call_activities_only_through_the_kit() -> None:
    offending = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((REPO / "workflows").rglob("*.py"))
        if path.parent.name != "kit"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if BYPASSES.search(line)
    ]
    assert offending == []


@pytest.mark.parametrize("io", list(IO))
def test_every_kind_of_io_has_a_policy_that_fits_where_it_runs(io: IO) -> None:
    policy = POLICIES[io]
    if policy.local:
        # A local activity runs inside the workflow task's lease: short attempts, no heartbeats, no
        # cancellation to confirm (only ordinary activities can be cancelled and confirmed).
        assert policy.start_to_close.total_seconds() <= 60
        assert policy.heartbeat is None
        assert not policy.confirm_cancel
    if policy.heartbeat is not None:
        # A heartbeating call notices a lost worker well within one attempt.
        assert policy.heartbeat < policy.start_to_close
