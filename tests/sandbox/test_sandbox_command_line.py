"""`raypilot sandbox up|down` as separate processes (python -m sandbox.main) where no stack starts: bad input,
`down` with nothing running, and `up` refusing, with the reason and what to do, when the real stack's binaries
are not built. tests/realkube/test_sandbox_command.py runs the stack itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def sandbox_cli(
    *args: str, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandbox.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["up", "--ray", "imaginary"],
        ["up", "--kube", "imaginary"],
        ["up", "--kube", "simulated"],  # the sandbox's own API is no longer served by `up`
        ["sideways"],
        ["up", "--unknown-flag"],
        [],
        ["down", "extra"],
    ],
)
def test_bad_input_exits_2(args: list[str], tmp_path: Path) -> None:
    result = sandbox_cli(*args, "--dir", str(tmp_path)) if args[:1] == ["up"] else sandbox_cli(*args)
    assert result.returncode == 2, result
    assert result.stderr.strip()


def test_down_with_nothing_running_succeeds(tmp_path: Path) -> None:
    result = sandbox_cli("down", "--dir", str(tmp_path / "never-used"))
    assert result.returncode == 0, result.stderr


def test_up_without_the_built_stack_fails_saying_why_and_what_to_do(tmp_path: Path) -> None:
    """`up` never starts a cold build unasked and never falls back to another Kubernetes: with no built
    cache (or without root) it fails, naming the cause and the way out."""
    env = {key: value for key, value in os.environ.items() if key != "RAYPILOT_KUBE_DIR"}
    env["RAYPILOT_KUBE_CACHE"] = str(tmp_path / "empty-cache")
    for ray in ("real", "simulated"):
        result = sandbox_cli("up", "--ray", ray, "--dir", str(tmp_path / "sb"), env=env)
        assert result.returncode == 1, result
        if os.geteuid() == 0:
            assert "not built" in result.stderr, result.stderr
            assert "make kube" in result.stderr, result.stderr
        else:
            assert "needs root" in result.stderr, result.stderr
        assert "KUBECONFIG=" not in result.stdout
    assert not (tmp_path / "sb" / "state.json").exists()
    assert not any((tmp_path / "empty-cache").rglob("bin"))
