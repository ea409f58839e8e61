"""A tiny HTTP server on a free local port for the tests that need something to answer (a load client's
target, a metrics endpoint for a real Prometheus to scrape)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

__all__ = ["local_http"]


@asynccontextmanager
async def local_http(
    path: str, answer: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> AsyncIterator[str]:
    """Serves `answer` for GET `path` on 127.0.0.1 and a free port, for the block; gives "127.0.0.1:PORT"."""
    app = web.Application()
    app.router.add_get(path, answer)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
