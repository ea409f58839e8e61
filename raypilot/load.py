"""Continuous HTTP load against a Serve endpoint, recording which version answered each request and when.

Used by the demo and by the upgrade tests: `async with SteadyLoad(url) as load: ...` keeps `concurrency`
clients sending GETs until the block ends; `load.samples` holds one `Sample` per request. The answer's JSON
field `version` (sandbox.apps.versioned) tells the versions apart; anything else is counted as a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import time
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType

import httpx

FAILED = "failed"


@dataclass(frozen=True)
class Sample:
    at: float  # time.monotonic() when the answer (or error) arrived
    version: str  # the version that answered, or FAILED
    detail: str = ""  # for a failure: status code or error
    latency_s: float = 0.0  # from sending the request to its answer (or error)


@dataclass
class SteadyLoad:
    url: str
    concurrency: int = 8
    timeout_s: float = 10.0
    # False: a new TCP connection per request. A Service (kube-proxy, the sandbox's forwarder) picks the pod
    # when a connection opens, so a kept-alive connection stays on the old cluster until that one is deleted,
    # and requests in flight then fail; short connections follow a selector switch at once.
    keep_alive: bool = True
    # Each client waits this long after an answer: a bounded rate leaves CPU to what is being measured when
    # load, worker and cluster share a small machine (0: as fast as answers come).
    pause_s: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list, init=False)
    _client: httpx.AsyncClient | None = field(default=None, init=False)
    _waiters: list[tuple[int, asyncio.Event]] = field(default_factory=list, init=False)

    async def __aenter__(self) -> SteadyLoad:
        kept = self.concurrency if self.keep_alive else 0
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=kept)
        headers = {} if self.keep_alive else {"Connection": "close"}
        self._client = httpx.AsyncClient(
            timeout=self.timeout_s, limits=limits, headers=headers, trust_env=False
        )
        self._tasks = [asyncio.create_task(self._send_until_stopped()) for _ in range(self.concurrency)]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _send_until_stopped(self) -> None:
        assert self._client is not None
        while not self._stop.is_set():
            self.samples.append(await self._one_request(self._client))
            for count, reached in self._waiters:
                if len(self.samples) >= count:
                    reached.set()
            if self.pause_s > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.pause_s)

    async def _one_request(self, http: httpx.AsyncClient) -> Sample:
        sent = time.monotonic()

        def sample(version: str, detail: str = "") -> Sample:
            now = time.monotonic()
            return Sample(now, version, detail, now - sent)

        try:
            response = await http.get(self.url)
        except httpx.HTTPError as error:
            return sample(FAILED, f"{type(error).__name__}: {error}{os_error_of(error)}")
        if response.status_code != 200:
            # The start of the body says who answered (a gateway without a route, or Serve without the app).
            said = response.text[:80]
            status = f"HTTP {response.status_code}"
            return sample(FAILED, f"{status} {said!r}" if said else status)
        try:
            version = response.json()["version"]
        except (ValueError, KeyError, TypeError):
            return sample(FAILED, f"unexpected answer {response.text[:80]!r}")
        return sample(str(version))

    async def wait_for_requests(self, count: int) -> None:
        """Return once at least `count` answers arrived (the load keeps running)."""
        if len(self.samples) >= count:
            return
        reached = asyncio.Event()
        self._waiters.append((count, reached))
        await reached.wait()

    def counts(self, since: float = 0.0, until: float = float("inf")) -> Counter[str]:
        """Answers per version (and FAILED) that arrived in [since, until)."""
        return Counter(sample.version for sample in self.samples if since <= sample.at < until)

    @property
    def failures(self) -> list[Sample]:
        return [sample for sample in self.samples if sample.version == FAILED]


def os_error_of(error: BaseException) -> str:
    """The operating system's error under an HTTP client's one, as " (ECONNREFUSED)": httpx says "All
    connection attempts failed" whether the peer reset the connection, refused it or was unreachable."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno is not None:
            return f" ({errno.errorcode.get(cause.errno, cause.errno)})"
        cause = cause.__cause__ or cause.__context__
    return ""


def share(counts: Counter[str], version: str) -> float:
    """The percentage of successful answers that came from `version` (0 when nothing answered)."""
    answered = sum(number for name, number in counts.items() if name != FAILED)
    return 100.0 * counts.get(version, 0) / answered if answered else 0.0
