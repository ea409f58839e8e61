"""The worker refuses to start, before it connects to anything, when a setting it reads for the workflows has
a typo: exit status 2 and one log line naming the variable and the field (here the cluster-wide default of
raypilot.io/notify, `RAYPILOT_NOTIFY`), both as `python worker.py` and as the console script `raypilot
worker` (which ends the process with os._exit: the line must be written before)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).parent / "raypilot"


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "worker.py"], [str(CONSOLE_SCRIPT), "worker"]],
    ids=["worker.py", "raypilot-worker"],
)
def test_a_bad_notify_default_stops_the_worker_at_start(command: list[str]) -> None:
    env = {
        **os.environ,
        "RAYPILOT_NOTIFY": "{secretRef: {name: hooks}, events: [deployed]}",
        # nothing listens there: a worker that got past its settings would fail differently, later
        "TEMPORAL_ADDRESS": "127.0.0.1:1",
    }
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    output = done.stdout + done.stderr
    assert 'ERROR raypilot.worker: RAYPILOT_NOTIFY: events[0]: unsupported value "deployed"' in output
    assert "cannot reach Temporal" not in output
