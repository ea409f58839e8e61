"""A real S3-compatible server for the log store's tests: moto's server mode, run from its own venv
(`make s3-server`: .venv-s3, pinned in tests/s3-server.lock), on 127.0.0.1 and a free port."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

S3_PYTHON = Path(__file__).resolve().parents[2] / ".venv-s3" / "bin" / "python"
_LISTENING = re.compile(rb"Running on (http://127\.0\.0\.1:\d+)")


@contextlib.asynccontextmanager
async def s3_server() -> AsyncIterator[str]:
    """Runs moto's server for the block; gives its endpoint URL. Skips when .venv-s3 is not installed."""
    if not S3_PYTHON.exists():
        pytest.skip("no S3 test server: run `make s3-server` (moto in .venv-s3)")
    process = await asyncio.create_subprocess_exec(
        str(S3_PYTHON), "-m", "moto.server", "-H", "127.0.0.1", "-p", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        endpoint = ""
        async with asyncio.timeout(60):
            while not endpoint:
                line = await process.stdout.readline()
                if not line:
                    raise RuntimeError("moto's server exited before it listened")
                found = _LISTENING.search(line)
                endpoint = found.group(1).decode() if found else ""
        drain = asyncio.ensure_future(_drain(process.stdout))
        yield endpoint
        drain.cancel()
    finally:
        process.terminate()
        with contextlib.suppress(ProcessLookupError):
            await process.wait()


async def _drain(stream: asyncio.StreamReader) -> None:
    """Reads the server's request log, so a full pipe never blocks it."""
    while await stream.readline():
        pass
