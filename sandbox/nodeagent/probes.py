"""A container's probes (startup, readiness, liveness) as the kubelet runs them.

`ProbeSpec.of` reads a probe from a container (the kubelet's defaults filled in); `ProbeTracker` turns
results into the probe's verdict with its success and failure thresholds (pure, tested with tables);
`keep_probing` checks a probe every period and hands each change of its verdict on; `run_probe` does one
check: an exec probe runs its command in the pod's network namespace with the container's environment,
httpGet and tcpSocket probes reach the pod IP from the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["ProbeSpec", "ProbeTracker", "keep_probing", "resolve_port", "run_probe"]


@dataclass(frozen=True)
class ProbeSpec:
    handler: Mapping[str, Any]  # {"exec": ...} | {"httpGet": ...} | {"tcpSocket": ...} | {"grpc": ...}
    initial_delay_s: float = 0.0
    period_s: float = 10.0
    timeout_s: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def of(cls, container: Mapping[str, Any], kind: str) -> ProbeSpec | None:
        """The container's `kind` probe ("startupProbe", "readinessProbe", "livenessProbe"), or None."""
        probe = container.get(kind)
        if not probe:
            return None
        handler = {key: probe[key] for key in ("exec", "httpGet", "tcpSocket", "grpc") if key in probe}
        return cls(
            handler=handler,
            initial_delay_s=float(probe.get("initialDelaySeconds") or 0),
            period_s=float(probe.get("periodSeconds") or 10),
            timeout_s=float(probe.get("timeoutSeconds") or 1),
            success_threshold=int(probe.get("successThreshold") or 1),
            failure_threshold=int(probe.get("failureThreshold") or 3),
        )


@dataclass
class ProbeTracker:
    """Consecutive results against the thresholds: the verdict changes only once a threshold is reached."""

    spec: ProbeSpec
    passing: bool
    successes: int = 0
    failures: int = 0

    def record(self, succeeded: bool) -> bool:
        """Adds one result; returns whether the verdict changed."""
        if succeeded:
            self.successes, self.failures = self.successes + 1, 0
            if not self.passing and self.successes >= self.spec.success_threshold:
                self.passing = True
                return True
        else:
            self.successes, self.failures = 0, self.failures + 1
            if self.passing and self.failures >= self.spec.failure_threshold:
                self.passing = False
                return True
        return False


async def keep_probing(
    probe: ProbeSpec,
    passing: bool,
    check: Callable[[ProbeSpec], Awaitable[bool]],
    changed: Callable[[bool], Awaitable[bool]],
) -> None:
    """Checks `probe` every period after its initial delay, starting from the verdict `passing`; each change
    of the verdict goes to `changed`, which returns True to stop (a failed liveness probe: the container is
    killed) or False to keep probing (readiness, for as long as the container runs)."""
    tracker = ProbeTracker(probe, passing=passing)
    await asyncio.sleep(probe.initial_delay_s)
    while True:
        if tracker.record(await check(probe)) and await changed(tracker.passing):
            return
        await asyncio.sleep(probe.period_s)


def resolve_port(port: int | str, container: Mapping[str, Any]) -> int | None:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for declared in container.get("ports") or []:
        if declared.get("name") == port:
            return int(declared["containerPort"])
    return None


async def _exec(netns: str, argv: Sequence[str], env: Mapping[str, str], timeout_s: float) -> bool:
    process = await asyncio.create_subprocess_exec(
        "ip",
        "netns",
        "exec",
        netns,
        *argv,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        return await asyncio.wait_for(process.wait(), timeout_s) == 0
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        await process.wait()
        return False


async def _http(pod_ip: str, port: int, get: Mapping[str, Any], timeout_s: float) -> bool:
    scheme = str(get.get("scheme") or "HTTP").lower()
    host = str(get.get("host") or pod_ip)
    path = str(get.get("path") or "/")
    headers = {str(h["name"]): str(h["value"]) for h in get.get("httpHeaders") or []}
    try:
        async with httpx.AsyncClient(timeout=timeout_s, verify=False, trust_env=False) as client:
            answer = await client.get(f"{scheme}://{host}:{port}{path}", headers=headers)
    except httpx.HTTPError:
        return False
    return 200 <= answer.status_code < 400


async def _tcp(pod_ip: str, port: int, timeout_s: float) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(pod_ip, port), timeout_s)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def run_probe(
    spec: ProbeSpec, container: Mapping[str, Any], netns: str, pod_ip: str, env: Mapping[str, str]
) -> bool:
    """One check of the probe; an unsupported handler (grpc) or an unknown port name fails it."""
    handler = spec.handler
    if "exec" in handler:
        return await _exec(netns, list(handler["exec"].get("command") or []), env, spec.timeout_s)
    for key in ("httpGet", "tcpSocket"):
        if key in handler:
            port = resolve_port(handler[key].get("port", 0), container)
            if port is None:
                return False
            if key == "httpGet":
                return await _http(pod_ip, port, handler[key], spec.timeout_s)
            return await _tcp(pod_ip, port, spec.timeout_s)
    return False
