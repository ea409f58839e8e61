"""The cache directory a pinned-module build script (kube/build.sh, temporal/build.sh: kube/go-cache.sh)
fills, as the sandbox asks for it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["cached_build_dir"]


def cached_build_dir(
    script: Path, dir_env: str, error: type[Exception], *, build: bool, show_progress: bool
) -> Path:
    """$`dir_env` when set, else the directory `script` prints: at once when its cache is complete; otherwise
    the script builds it (minutes; its progress on our stderr if asked) or, with `build=False`, `error` is
    raised with the script's message. A failed build raises `error` naming the script and its exit code."""
    given = os.environ.get(dir_env)
    if given:
        return Path(given)
    done = subprocess.run(
        ["bash", str(script), *(() if build else ("--check",))],
        check=False,
        stdout=subprocess.PIPE,
        stderr=None if show_progress else subprocess.PIPE,
        text=True,
    )
    if not build and done.returncode == 3:
        raise error(done.stderr.strip())
    if done.returncode != 0:
        detail = "its progress is above" if show_progress else (done.stderr or "").strip()[-2000:]
        name = f"{script.parent.name}/{script.name}"
        raise error(f"{name} failed ({done.returncode}): {detail}")
    return Path(done.stdout.strip().splitlines()[-1])
