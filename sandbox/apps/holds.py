"""`?hold_until=<path>`: the sandbox apps (real Serve's and the simulated one) answer such a request only once
that file exists. A test holds requests open on a cluster for exactly as long as it needs (through a drain,
whatever the machine's speed) and releases them by creating the file."""

from __future__ import annotations

import asyncio
from pathlib import Path

HOLD_PARAM = "hold_until"
POLL_S = 0.05


async def held_until(path: str) -> None:
    # Another process makes the file: a poll is the one wait that needs nothing from it.
    while not await asyncio.to_thread(Path(path).exists):  # noqa: ASYNC110
        await asyncio.sleep(POLL_S)
