"""One pod on the node, from its start to its end: init containers in order, then every container kept running
as its restartPolicy says, its probes, and its status written whenever it changes.

Statuses are written as a kubelet's status manager writes them: the latest one, by one writer, again after a
failure until the API server takes it, so a pod's change made while the API server restarts is not lost and
the pod's run never waits on the API server."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from sandbox.nodeagent.containers import (
    ContainerConfigError,
    ContainerProcess,
    PodFiles,
    container_env,
    start_container,
)
from sandbox.nodeagent.env import EnvResolutionError, ObjectReader
from sandbox.nodeagent.network import PodNetwork
from sandbox.nodeagent.podstatus import (
    ContainerRun,
    PodReport,
    RunState,
    Termination,
    pod_status,
    restart_delay,
    should_restart,
)
from sandbox.nodeagent.probes import ProbeSpec, ProbeTracker, keep_probing, run_probe
from sandbox.nodeagent.serviceaccount import (
    TOKEN_SECONDS,
    TokenIssuer,
    mounts_service_account,
    write_credentials,
)

__all__ = ["PodRunner", "rfc3339_now"]

log = logging.getLogger(__name__)
CONFIG_RETRY_S = 2.0  # a missing Secret or ConfigMap is looked for again after this
STATUS_RETRY_S = 1.0
TOKEN_RENEW_AFTER_S = 0.8 * TOKEN_SECONDS
DEFAULT_GRACE_S = 30.0
LIVENESS_KILL_GRACE_S = 5.0


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodRunner:
    """Runs the pod `pod` in `network`; `write_status` sends a status to the API server."""

    def __init__(
        self,
        pod: Mapping[str, Any],
        network: PodNetwork,
        files: PodFiles,
        host_ip: str,
        reader: ObjectReader,
        write_status: Callable[[dict[str, Any]], Awaitable[None]],
        issuer: TokenIssuer | None = None,
    ) -> None:
        self.pod = dict(pod)
        self.issuer = issuer
        self._renewal: asyncio.Task[None] | None = None
        self.network, self.files, self.reader = network, files, reader
        self._write_status = write_status
        spec = pod.get("spec") or {}
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        self.init_specs: list[dict[str, Any]] = list(spec.get("initContainers") or [])
        self.main_specs: list[dict[str, Any]] = list(spec.get("containers") or [])
        self.init = [
            ContainerRun(c["name"], str(c.get("image", "")), reason="PodInitializing")
            for c in self.init_specs
        ]
        self.main = [
            ContainerRun(c["name"], str(c.get("image", "")), reason="PodInitializing")
            for c in self.main_specs
        ]
        self.report = PodReport(network.ip, host_ip, rfc3339_now())
        self.processes: dict[str, ContainerProcess] = {}
        self.stopping = asyncio.Event()
        self._wanted: dict[str, Any] | None = None
        self._published: dict[str, Any] | None = None
        self._writer: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    # ---- status ----------------------------------------------------------------------------------------

    async def publish(self) -> None:
        """Hands the pod's status, if it changed, to the writer."""
        status = pod_status(self.restart_policy, self.init, self.main, self.report, rfc3339_now())
        if status == self._wanted:
            return
        self._wanted = status
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write_wanted())

    async def written(self) -> None:
        """Returns once the latest status is written (or the pod is stopping and it could not be)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    async def _write_wanted(self) -> None:
        while self._wanted is not None and self._wanted != self._published:
            status = self._wanted
            try:
                await self._write_status(status)
            except Exception as error:
                if self.stopping.is_set():
                    return  # the pod is being deleted: its status no longer matters
                log.warning(
                    "status of pod %s not written (%s); again in %s s", self.name, error, STATUS_RETRY_S
                )
                await asyncio.sleep(STATUS_RETRY_S)
                continue
            self._published = status

    def _set(self, init: bool, index: int, **changes: Any) -> None:
        runs = self.init if init else self.main
        runs[index] = dataclasses.replace(runs[index], **changes)

    @property
    def finished(self) -> bool:
        return pod_status(self.restart_policy, self.init, self.main, self.report, "")["phase"] in (
            "Succeeded",
            "Failed",
        )

    # ---- the lifecycle ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Until every container is done for good, or `stop` was called; then until the last status is
        written (a pod done for good is forgotten by the agent)."""
        try:
            await self._run_containers()
        finally:
            if self._renewal is not None:
                self._renewal.cancel()
        await self.written()

    async def _run_containers(self) -> None:
        self.files.prepare()
        await self.publish()
        specs = [*self.init_specs, *self.main_specs]
        if self.issuer is not None and any(mounts_service_account(spec) for spec in specs):
            if not await self._project_credentials(self.issuer):
                return
            self._renewal = asyncio.ensure_future(self._renew_credentials(self.issuer))
        for index, spec in enumerate(self.init_specs):
            if not await self._run_to_completion(index, spec):
                return
        self.main = [dataclasses.replace(run, reason="ContainerCreating") for run in self.main]
        await asyncio.gather(*(self._keep_running(i, spec) for i, spec in enumerate(self.main_specs)))

    async def stop(self, grace_s: float | None) -> None:
        """Stops every container (SIGTERM, SIGKILL after the grace period)."""
        self.stopping.set()
        grace = DEFAULT_GRACE_S if grace_s is None else max(grace_s, 0.0)
        await asyncio.gather(*(process.stop(grace) for process in list(self.processes.values())))

    async def _start(
        self, init: bool, index: int, spec: Mapping[str, Any]
    ) -> tuple[ContainerProcess, dict[str, str]] | None:
        """Starts the container, or reports why it cannot start and waits (None once stopping)."""
        while not self.stopping.is_set():
            try:
                env = await self._environment(spec)
                process = await start_container(spec, env, self.network, self.files)
            except (EnvResolutionError, ContainerConfigError) as error:
                reason = (
                    error.reason if isinstance(error, ContainerConfigError) else "CreateContainerConfigError"
                )
                self._set(init, index, state=RunState.WAITING, reason=reason, message=str(error))
                await self.publish()
                await self._sleep(CONFIG_RETRY_S)
                continue
            self.processes[process.name] = process
            return process, env
        return None

    async def _environment(self, spec: Mapping[str, Any]) -> dict[str, str]:
        try:
            return await asyncio.to_thread(container_env, self.reader, self.pod, spec, self.files)
        except EnvResolutionError:
            raise
        except Exception as error:  # the API server did not answer: a kubelet reports the same, and retries
            raise EnvResolutionError(f"reading the container's Secrets and ConfigMaps: {error}") from error

    async def _project_credentials(self, issuer: TokenIssuer) -> bool:
        """Writes the pod's ServiceAccount credentials, trying again until the API server gives a token (False
        once the pod is stopping)."""
        while not self.stopping.is_set():
            try:
                token = await issuer.issue(self.pod)
            except Exception as error:
                log.warning("no ServiceAccount token for pod %s yet (%s); asking again", self.name, error)
                await self._sleep(CONFIG_RETRY_S)
                continue
            namespace = str(self.pod["metadata"]["namespace"])
            write_credentials(self.files.service_account, token, issuer.ca_pem, namespace)
            return True
        return False

    async def _renew_credentials(self, issuer: TokenIssuer) -> None:
        while not self.stopping.is_set():
            await self._sleep(TOKEN_RENEW_AFTER_S)
            await self._project_credentials(issuer)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stopping.wait(), seconds)

    async def _run_to_completion(self, index: int, spec: Mapping[str, Any]) -> bool:
        """An init container, restarted after failures unless restartPolicy is Never; whether it completed."""
        while True:
            started_process = await self._start(True, index, spec)
            if started_process is None:
                return False
            process = started_process[0]
            started = rfc3339_now()
            self._set(True, index, state=RunState.RUNNING, started_at=started, started=True, message="")
            await self.publish()
            code = await process.wait()
            ended = Termination(code, "Completed" if code == 0 else "Error", started, rfc3339_now())
            self._set(True, index, state=RunState.TERMINATED, terminated=ended)
            await self.publish()
            if code == 0:
                return True
            if self.stopping.is_set() or self.restart_policy == "Never":
                return False
            restarts = self.init[index].restart_count
            await self._sleep(restart_delay(restarts))
            self._set(True, index, restart_count=restarts + 1, last_terminated=ended)

    async def _keep_running(self, index: int, spec: Mapping[str, Any]) -> None:
        while True:
            started_process = await self._start(False, index, spec)
            if started_process is None:
                return
            process, env = started_process
            started = rfc3339_now()
            has_startup = ProbeSpec.of(spec, "startupProbe") is not None
            has_readiness = ProbeSpec.of(spec, "readinessProbe") is not None
            self._set(
                False,
                index,
                state=RunState.RUNNING,
                started_at=started,
                started=not has_startup,
                ready=not has_startup and not has_readiness,
                message="",
            )
            await self.publish()
            probes = asyncio.create_task(self._probe(index, spec, process, env))
            code = await process.wait()
            probes.cancel()
            await asyncio.gather(probes, return_exceptions=True)
            ended = Termination(code, "Completed" if code == 0 else "Error", started, rfc3339_now())
            restarts = self.main[index].restart_count
            if self.stopping.is_set() or not should_restart(self.restart_policy, code):
                self._set(False, index, state=RunState.TERMINATED, terminated=ended, ready=False)
                await self.publish()
                return
            self._set(
                False,
                index,
                state=RunState.WAITING,
                reason="CrashLoopBackOff",
                message=f"back-off restarting failed container {spec['name']}",
                ready=False,
                last_terminated=ended,
            )
            await self.publish()
            await self._sleep(restart_delay(restarts))
            self._set(False, index, restart_count=restarts + 1)

    # ---- probes ----------------------------------------------------------------------------------------

    async def _probe(
        self, index: int, spec: Mapping[str, Any], process: ContainerProcess, env: dict[str, str]
    ) -> None:
        async def check(probe: ProbeSpec) -> bool:
            return await run_probe(probe, spec, self.network.netns, self.network.ip, env)

        startup = ProbeSpec.of(spec, "startupProbe")
        if startup is not None:
            tracker = ProbeTracker(startup, passing=False)
            await asyncio.sleep(startup.initial_delay_s)
            while not tracker.passing:
                tracker.record(await check(startup))
                if tracker.failures >= startup.failure_threshold:
                    await process.stop(LIVENESS_KILL_GRACE_S)
                    return
                if not tracker.passing:
                    await asyncio.sleep(startup.period_s)
            self._set(False, index, started=True)
            if ProbeSpec.of(spec, "readinessProbe") is None:
                self._set(False, index, ready=True)
            await self.publish()
        await asyncio.gather(self._readiness(index, spec, check), self._liveness(spec, process, check))

    async def _readiness(
        self, index: int, spec: Mapping[str, Any], check: Callable[[ProbeSpec], Awaitable[bool]]
    ) -> None:
        probe = ProbeSpec.of(spec, "readinessProbe")
        if probe is None:
            return

        async def ready_changed(ready: bool) -> bool:
            self._set(False, index, ready=ready)
            await self.publish()
            return False

        await keep_probing(probe, False, check, ready_changed)

    async def _liveness(
        self,
        spec: Mapping[str, Any],
        process: ContainerProcess,
        check: Callable[[ProbeSpec], Awaitable[bool]],
    ) -> None:
        probe = ProbeSpec.of(spec, "livenessProbe")
        if probe is None:
            return

        async def alive_changed(alive: bool) -> bool:
            if alive:
                return False
            await process.stop(LIVENESS_KILL_GRACE_S)
            return True

        await keep_probing(probe, True, check, alive_changed)
