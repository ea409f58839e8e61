"""Gateway API's RequestMirror filter in the sandbox's Gateway (sandbox/proxy.py): a share of a route's
requests is copied to a mirror backend, its responses discarded.

A copy never delays nor fails the primary response: it is sent from a task of its own, its body is the
primary's chunks handed over as they pass (an unbounded queue: the primary never waits for the copy), and
whatever happens to it (refused, slow, an error status) is only logged. Copies are best effort: each gets
`MIRROR_TIMEOUT_S`, and beyond `MAX_MIRRORS_IN_FLIGHT` a copy is dropped and counted, so a slow mirror
backend cannot pile up tasks and memory in the Gateway.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

__all__ = ["MAX_MIRRORS_IN_FLIGHT", "MIRROR_TIMEOUT_S", "MirrorBackend", "MirrorSampler", "Mirroring"]

log = logging.getLogger(__name__)

MIRROR_TIMEOUT_S = 30.0
MAX_MIRRORS_IN_FLIGHT = 256


@dataclass(frozen=True)
class MirrorBackend:
    """Where a route's RequestMirror filter copies `percent` of its requests."""

    host: str
    port: int
    percent: int = 100


class MirrorSampler:
    """Which requests a mirror copies: exactly `percent` of every hundred, spread evenly (request n is copied
    when floor(n * percent / 100) grows), so the share is exact over any hundred requests, not only on
    average."""

    def __init__(self, mirror: MirrorBackend) -> None:
        self.mirror = mirror
        self._seen = 0

    def copies(self) -> bool:
        before = self._seen * self.mirror.percent // 100
        self._seen += 1
        return self._seen * self.mirror.percent // 100 > before


class Mirroring:
    """The copies of one listener in flight, and how many were sent and dropped."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self.sent = 0
        self.dropped = 0

    def copy(
        self,
        session: aiohttp.ClientSession,
        request: web.BaseRequest,
        headers: CIMultiDict[str],
        mirror: MirrorBackend,
        body: AsyncIterator[bytes] | None,
    ) -> AsyncIterator[bytes] | None:
        """Starts a copy of `request` to `mirror`; the body the primary request sends from now on (the same
        chunks, each also handed to the copy)."""
        if len(self._tasks) >= MAX_MIRRORS_IN_FLIGHT:
            self.dropped += 1
            return body
        chunks: asyncio.Queue[bytes | None] | None = asyncio.Queue() if body is not None else None
        url = URL(f"http://{mirror.host}:{mirror.port}{request.raw_path}", encoded=True)
        task = asyncio.ensure_future(_send(session, request.method, url, headers, chunks))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.sent += 1
        if body is None or chunks is None:
            return None
        return _tee(body, chunks)

    async def stop(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _send(
    session: aiohttp.ClientSession,
    method: str,
    url: URL,
    headers: CIMultiDict[str],
    chunks: asyncio.Queue[bytes | None] | None,
) -> None:
    body = _drain(chunks) if chunks is not None else None
    try:
        async with session.request(
            method,
            url,
            headers=headers,
            data=body,
            allow_redirects=False,
            compress=None,
            timeout=aiohttp.ClientTimeout(total=MIRROR_TIMEOUT_S),
        ) as response:
            await response.read()
    except (aiohttp.ClientError, OSError, TimeoutError) as error:
        log.debug("mirror -> %s: %s", url, error)


async def _tee(body: AsyncIterator[bytes], copy: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
    """The body's chunks, each also put on `copy` (unbounded: never waits), then None there at its end."""
    try:
        async for chunk in body:
            copy.put_nowait(chunk)
            yield chunk
    finally:
        copy.put_nowait(None)


async def _drain(chunks: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
    while (chunk := await chunks.get()) is not None:
        yield chunk
