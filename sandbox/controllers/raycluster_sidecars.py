"""The kubelet's part for a Ray head pod's other containers (KubeRay's SidecarMode `ray-job-submitter`, say).

Every container after the Ray one (`spec.containers[0]`) that has a command or args runs as a local process
(pod_processes: env, PATH, log, own session) once the head pod is Running with its pod IP. It shares the pod's
network namespace, so `127.0.0.1` / `localhost` in its env and argv become the pod IP, where the head's ports
are forwarded (the real or simulated dashboard answers on podIP:8265). Its state is reported in
status.containerStatuses: running, then terminated with its exit code; it is restarted only if its own
restartPolicy (else the pod's) says so. Containers with neither command nor args (image-only sidecars such
as a log shipper) are only reported running. Processes are stopped by PID when their pod goes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.controllers.pod_processes import PodProcessLauncher, exit_code_of, kill_process_group
from sandbox.controllers.raycluster_env import EnvResolutionError
from sandbox.controllers.raycluster_kubelet import update_pod_status
from sandbox.controllers.raycluster_pods import NODE_TYPE_LABEL
from sandbox.controllers.raycluster_podstatus import (
    container_running_status,
    container_terminated_status,
    container_waiting_status,
    now_rfc3339,
    pod_conditions,
)
from sandbox.controllers.raycluster_workqueue import follow_changes
from sandbox.store import Store, WatchEvent

log = logging.getLogger(__name__)


@dataclass
class _RunningContainer:
    pod_uid: str
    name: str
    process: asyncio.subprocess.Process
    started_at: str
    restarts: int = 0
    stopping: bool = False


def runs_as_process(container: Mapping[str, Any]) -> bool:
    return bool(container.get("command") or container.get("args"))


def restarts_after(container: Mapping[str, Any], pod_restart_policy: str | None, exit_code: int) -> bool:
    """Whether the kubelet restarts a container that exited with `exit_code`."""
    policy = container.get("restartPolicy") or pod_restart_policy or "Always"
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def pod_phase_after(statuses: Sequence[Mapping[str, Any]], phase: str) -> str:
    """Running while any container is not terminated; then Succeeded if every one exited 0, else Failed."""
    states = [(s.get("state") or {}).get("terminated") for s in statuses]
    if phase != "Running" or not states or any(t is None for t in states):
        return phase
    return "Succeeded" if all(int(t.get("exitCode", 1)) == 0 for t in states if t is not None) else "Failed"


class HeadSidecarController:
    def __init__(
        self,
        store: Store,
        workdir: Path,
        *,
        extra_env: Mapping[str, str] | None = None,
        kill_grace_s: float = 2.0,
        restart_delay_s: float = 1.0,
        on_processes_changed: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.pods_dir = workdir / "pods"
        self.launcher = PodProcessLauncher(store, extra_env)
        self.kill_grace_s = kill_grace_s
        self.restart_delay_s = restart_delay_s
        self._on_processes_changed = on_processes_changed or (lambda: None)
        self._started_pods: set[str] = set()  # uids of head pods whose containers were started
        self._running: dict[tuple[str, str], _RunningContainer] = {}  # (pod uid, container) -> process
        self._tasks: set[asyncio.Task[None]] = set()
        self._watch: asyncio.Task[None] | None = None

    @property
    def pids(self) -> list[int]:
        return [c.process.pid for c in self._running.values() if c.process.returncode is None]

    async def start(self) -> None:
        self._watch = asyncio.create_task(
            follow_changes(
                self.store, "v1", "Pod", self._on_pod_event, label_selector=f"{NODE_TYPE_LABEL}=head"
            )
        )

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        await asyncio.gather(*(self._kill(c) for c in list(self._running.values())))
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_pod_event(self, event: WatchEvent) -> None:
        pod = event.object
        uid = pod["metadata"]["uid"]
        if event.type == "DELETED" or pod["metadata"].get("deletionTimestamp"):
            self._started_pods.discard(uid)
            for container in [c for c in self._running.values() if c.pod_uid == uid]:
                self._spawn(self._kill(container))
            return
        status = pod.get("status") or {}
        containers = (pod.get("spec") or {}).get("containers") or []
        if uid in self._started_pods or status.get("phase") != "Running" or not status.get("podIP"):
            return
        if any(runs_as_process(c) for c in containers[1:]):
            self._started_pods.add(uid)
            for container in containers[1:]:
                if runs_as_process(container):
                    self._spawn(self._run(pod, container, restarts=0))

    async def _run(self, pod: dict[str, Any], container: Mapping[str, Any], *, restarts: int) -> None:
        """One run of the container; restarts it (same pod) when its restartPolicy says so."""
        meta, name = pod["metadata"], container["name"]
        namespace, pod_ip = meta.get("namespace", "default"), str(pod["status"]["podIP"])
        pod_dir = self.pods_dir / namespace / meta["name"]
        log_path = pod_dir / f"{name}.log"  # the Job controller's pods write container.log
        try:
            env = self.launcher.environment(pod, container, pod_ip)
        except EnvResolutionError as exc:
            self._report(pod, container_waiting_status(name, str(exc)))
            return
        argv = self.launcher.argv(namespace, container, env, pod_ip)
        started_at = now_rfc3339()
        try:
            process = await self.launcher.start(argv, env, pod_dir, log_path)
        except (OSError, ValueError) as exc:
            log.warning("container %s of %s/%s did not start: %s", name, namespace, meta["name"], exc)
            self._report(pod, container_terminated_status(name, 128, "StartError", started_at, str(exc)))
            return
        running = _RunningContainer(meta["uid"], name, process, started_at, restarts)
        self._running[(meta["uid"], name)] = running
        self._on_processes_changed()
        if meta["uid"] not in self._started_pods:  # the pod went while the process was starting
            await self._kill(running)
        self._report(pod, container_running_status(name, started_at, restarts=restarts))
        exit_code = exit_code_of(await process.wait())
        if self._running.get((meta["uid"], name)) is running:
            del self._running[(meta["uid"], name)]
        self._on_processes_changed()
        if running.stopping:
            return
        reason = "Completed" if exit_code == 0 else "Error"
        terminated = container_terminated_status(name, exit_code, reason, started_at, restarts=restarts)
        self._report(pod, terminated)
        if restarts_after(container, pod["spec"].get("restartPolicy"), exit_code):
            await asyncio.sleep(self.restart_delay_s)
            if meta["uid"] in self._started_pods:
                await self._run(pod, container, restarts=restarts + 1)

    def _report(self, pod: dict[str, Any], container_status: dict[str, Any]) -> None:
        """Replace this container's entry in status.containerStatuses; derive the phase and readiness."""
        meta = pod["metadata"]
        current = self.store.try_get("v1", "Pod", meta.get("namespace"), meta["name"])
        if current is None or current["metadata"]["uid"] != meta["uid"]:
            return
        status = current.get("status") or {}
        statuses = [dict(s) for s in status.get("containerStatuses") or []]
        previous = next((s for s in statuses if s.get("name") == container_status["name"]), None)
        restarts_before = previous.get("restartCount", 0) if previous is not None else None
        if restarts_before is not None and container_status["restartCount"] > restarts_before and previous:
            container_status["lastState"] = previous["state"]  # a restart keeps the last exit, as the kubelet
        statuses = [s for s in statuses if s is not previous] + [container_status]
        order = [c["name"] for c in current["spec"]["containers"]]
        statuses.sort(key=lambda s: order.index(s["name"]) if s["name"] in order else len(order))
        ready = all(s.get("ready") for s in statuses)
        update_pod_status(
            self.store,
            current,
            phase=pod_phase_after(statuses, str(status.get("phase", "Running"))),
            containerStatuses=statuses,
            conditions=pod_conditions(ready, status.get("conditions")),
        )

    async def _kill(self, container: _RunningContainer) -> None:
        container.stopping = True
        await kill_process_group(container.process, self.kill_grace_s)
