"""The manual's "Testing your own policies" example (docs/testing-policies.md) is a test a platform team could
write: run it as they would, as a test file of its own with raypilot's pytest plugin loaded as the page says,
outside this repository's tests."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing-policies.md"
EXAMPLE = re.compile(r"<!-- tested by tests/docs/test_policy_example.py -->\n```python\n(.*?)```", re.S)


def test_the_policy_example_of_the_manual_passes(tmp_path: Path) -> None:
    [example] = EXAMPLE.findall(PAGE.read_text())
    (tmp_path / "test_our_policy.py").write_text(example)
    # Their own project: no configuration of ours, only pytest-asyncio's auto mode and the plugin the page
    # names.
    ini = "[pytest]\nasyncio_mode = auto\naddopts = -p raypilot.testing.plugin\n"
    (tmp_path / "pytest.ini").write_text(ini)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_our_policy.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
