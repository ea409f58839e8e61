"""Suite-wide pytest configuration. raypilot's own fixtures come from the `raypilot` pytest plugin
(raypilot/testing/plugin.py), the same one users load for their policy tests."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    # The Temporal SDK's native runtime can abort at interpreter exit (PyGILState_Release while
    # finalizing, exit 134) after every test passed; leave with pytest's own exit code instead.
    code = yield
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(int(code) if isinstance(code, int) else 1)
