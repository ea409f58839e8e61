"""Every committed history still replays with the current workflow code (the replay tests over committed
histories).

The histories (histories/*.json) are typical runs of both workflows on their fake activities, recorded by
`python -m tests.replay.record_histories` (see its docstring for when to re-record). A failure here means a
workflow change would break runs already in flight on a deployed worker: keep the old behaviour for them
behind `workflow.patched("<change-id>")` instead of re-recording the history.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.worker import WorkflowReplayResult

from raypilot.testing.replay import replay_history_files
from tests.replay.record_histories import HISTORIES, SCENARIOS

HISTORY_FILES = sorted(HISTORIES.glob("*.json"))


def test_every_scenario_has_a_committed_history() -> None:
    # More histories may sit beside them (e.g. recorded with RAYPILOT_RECORD_HISTORIES); all are replayed.
    assert set(SCENARIOS) <= {path.stem for path in HISTORY_FILES}


@pytest.fixture(scope="module")
async def replayed() -> dict[str, WorkflowReplayResult]:
    """Every committed history replayed once, on one replaying worker."""
    return await replay_history_files(HISTORY_FILES)


@pytest.mark.parametrize("path", HISTORY_FILES, ids=lambda path: path.stem)
def test_history_replays_with_the_current_workflow_code(
    path: Path, replayed: dict[str, WorkflowReplayResult]
) -> None:
    assert replayed[path.stem].replay_failure is None
