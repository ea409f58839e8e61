"""Waiting in the synchronous tests of tests/realkube: poll until a probe answers something truthy."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def eventually(probe: Callable[[], Any], what: str, within: float = 90.0, interval: float = 0.3) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {within:.0f} s")
