"""The sandbox's batch/v1 Job controller: each attempt is a pod object plus a local process.

The process is the pod template's first container, `command + args` in exec form (no shell unless the command
is one, as with KubeRay's `["/bin/bash", "-ce", "--"]` submitter), run with the container's environment, the
virtualenv's bin first on PATH (so `ray` and `python` are the project's), its cwd a per-pod directory under
the sandbox directory and stdout/stderr in `container.log` there. Only `completions: 1, parallelism: 1` Jobs
are modelled; `OnFailure` is treated like `Never` (a failed attempt is a failed pod).

In-cluster Service DNS names (`<svc>.<ns>.svc[.cluster.local]`) do not resolve on this machine, so they are
rewritten to the Service's clusterIP in env values and argv (see CONTROLLERS.md).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.controllers.job_pods import (
    attempt_pod,
    backoff_delay,
    condition_true,
    job_finish_time,
    job_finished,
    with_condition,
)
from sandbox.controllers.pod_processes import PodProcessLauncher, exit_code_of, kill_process_group
from sandbox.controllers.raycluster_env import EnvResolutionError
from sandbox.controllers.raycluster_podstatus import (
    container_running_status,
    container_terminated_status,
    container_waiting_status,
    now_rfc3339,
    pod_conditions,
    seconds_since,
)
from sandbox.controllers.raycluster_workqueue import FORGET, KeyedWorkQueue, ReconcileResult, follow_changes
from sandbox.store import Store, WatchEvent

log = logging.getLogger(__name__)

JobKey = tuple[str, str]
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' generateName alphabet
_CONFIG_ERROR_RETRY_S = 1.0


@dataclass
class _Attempt:
    job_uid: str
    namespace: str
    pod_name: str
    process: asyncio.subprocess.Process
    started_at: str
    pod_deleted: bool = False
    uncounted: bool = False  # a suspended Job's pods are removed without counting as failures


class JobController:
    def __init__(
        self,
        store: Store,
        workdir: Path,
        *,
        backoff_base_s: float = 1.0,
        backoff_cap_s: float = 10.0,
        kill_grace_s: float = 2.0,
        extra_env: Mapping[str, str] | None = None,
        on_processes_changed: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.pods_dir = workdir / "pods"
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.kill_grace_s = kill_grace_s
        self.launcher = PodProcessLauncher(store, extra_env)
        self._on_processes_changed = on_processes_changed or (lambda: None)
        self._queue: KeyedWorkQueue[JobKey] = KeyedWorkQueue("job", self._reconcile)
        self._attempts: dict[JobKey, _Attempt] = {}
        self._waiters: set[asyncio.Task[None]] = set()
        self._last_failure: dict[str, float] = {}  # job uid -> monotonic time of its latest failed attempt
        self._watches: list[asyncio.Task[None]] = []

    @property
    def pids(self) -> list[int]:
        return [a.process.pid for a in self._attempts.values() if a.process.returncode is None]

    async def start(self) -> None:
        self._watches = [
            asyncio.create_task(follow_changes(self.store, "batch/v1", "Job", self._on_job_event)),
            asyncio.create_task(
                follow_changes(self.store, "v1", "Pod", self._on_pod_event, label_selector="job-name")
            ),
        ]

    async def stop(self) -> None:
        for task in self._watches:
            task.cancel()
        await asyncio.gather(*self._watches, return_exceptions=True)
        await self._queue.stop()
        await asyncio.gather(*(self._kill(attempt) for attempt in list(self._attempts.values())))
        await asyncio.gather(*self._waiters, return_exceptions=True)

    def _on_job_event(self, event: WatchEvent) -> None:
        meta = event.object["metadata"]
        self._queue.enqueue((meta.get("namespace", "default"), meta["name"]))

    def _on_pod_event(self, event: WatchEvent) -> None:
        meta = event.object["metadata"]
        job_name = (meta.get("labels") or {}).get("job-name")
        key = (meta.get("namespace", "default"), str(job_name))
        attempt = self._attempts.get(key)
        if event.type == "DELETED" and attempt is not None and attempt.pod_name == meta["name"]:
            # A running pod deleted by someone: its process goes too, and the attempt counts as failed.
            attempt.pod_deleted = True
            asyncio.get_running_loop().create_task(self._kill(attempt))
        self._queue.enqueue(key)

    # ---- reconcile ----------------------------------------------------------------------------------------
    async def _reconcile(self, key: JobKey) -> ReconcileResult:
        namespace, name = key
        job = self.store.try_get("batch/v1", "Job", namespace, name)
        attempt = self._attempts.get(key)
        if attempt is not None and (job is None or _is_gone_or_replaced(job, attempt)):
            await self._kill(attempt)
        if job is None:
            return FORGET
        if job["metadata"].get("deletionTimestamp"):
            return None
        status = job.get("status") or {}
        if job_finished(status):
            return self._expire_after_ttl(job)
        spec = job.get("spec") or {}
        if spec.get("suspend"):
            if attempt is not None:
                attempt.uncounted = True
                await self._kill(attempt, delete_pod=True)
            self._write_status(
                job,
                active=0,
                ready=0,
                startTime=None,
                conditions=with_condition(status, "Suspended", "True", "JobSuspended", "Job suspended"),
            )
            return None
        if condition_true(status, "Suspended"):
            status = self._write_status(
                job, conditions=with_condition(status, "Suspended", "False", "JobResumed", "Job resumed")
            )
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime"):
            remaining = float(deadline) - seconds_since(status["startTime"])
            if remaining <= 0:
                if attempt is not None:
                    await self._kill(attempt, delete_pod=True)
                self._fail(job, "DeadlineExceeded", "Job was active longer than specified deadline")
                return None
        else:
            remaining = None
        if int(status.get("succeeded") or 0) >= int(spec.get("completions") or 1):
            self._complete(job)
            return self._expire_after_ttl(self.store.get("batch/v1", "Job", namespace, name))
        failed = int(status.get("failed") or 0)
        if failed > int(spec.get("backoffLimit", 6)):
            self._fail(job, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
            return None
        if key in self._attempts:
            return remaining
        wait = backoff_delay(failed, self.backoff_base_s, self.backoff_cap_s) - (
            time.monotonic() - self._last_failure.get(job["metadata"]["uid"], 0.0)
        )
        if failed and wait > 0:
            return wait if remaining is None else min(wait, remaining)
        retry = await self._start_attempt(job)
        return retry if retry is not None else remaining

    def _write_status(self, job: dict[str, Any], **changes: Any) -> dict[str, Any]:
        meta = job["metadata"]
        current = self.store.get("batch/v1", "Job", meta.get("namespace"), meta["name"])
        status = dict(current.get("status") or {})
        for field, value in changes.items():
            if value is None:
                status.pop(field, None)
            else:
                status[field] = value
        current["status"] = status
        updated = self.store.update("batch/v1", "Job", current, status=True)
        return dict(updated.get("status") or {})

    def _complete(self, job: dict[str, Any]) -> None:
        status = job.get("status") or {}
        message, reason = "Reached expected number of succeeded pods", "CompletionsReached"
        conditions = with_condition(status, "SuccessCriteriaMet", "True", reason, message)
        conditions = with_condition({"conditions": conditions}, "Complete", "True", reason, message)
        self._write_status(job, conditions=conditions, completionTime=now_rfc3339(), active=0, ready=0)

    def _fail(self, job: dict[str, Any], reason: str, message: str) -> None:
        status = job.get("status") or {}
        conditions = with_condition(status, "FailureTarget", "True", reason, message)
        conditions = with_condition({"conditions": conditions}, "Failed", "True", reason, message)
        self._write_status(job, conditions=conditions, active=0, ready=0)

    def _expire_after_ttl(self, job: dict[str, Any]) -> ReconcileResult:
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return None
        finished_at = job_finish_time(job.get("status") or {})
        remaining = float(ttl) - (seconds_since(finished_at) if finished_at else 0.0)
        if remaining > 0:
            return remaining
        meta = job["metadata"]
        if self.store.try_get("batch/v1", "Job", meta.get("namespace"), meta["name"]) is not None:
            self.store.delete("batch/v1", "Job", meta.get("namespace"), meta["name"], "Background")
        return None

    # ---- attempts -----------------------------------------------------------------------------------------
    async def _start_attempt(self, job: dict[str, Any]) -> float | None:
        """Create the attempt's pod and start its process; returns a retry delay when it cannot start yet."""
        meta = job["metadata"]
        namespace, job_name = meta.get("namespace", "default"), meta["name"]
        own_pods = self.store.list("v1", "Pod", namespace, label_selector=f"controller-uid={meta['uid']}")
        waiting = [pod for pod in own_pods if (pod.get("status") or {}).get("phase") == "Pending"]
        if (
            waiting
        ):  # an attempt whose config could not be resolved yet: retried in place, as the kubelet does
            pod = waiting[0]
            pod_dir = self.pods_dir / namespace / pod["metadata"]["name"]
        else:
            suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(5))
            pod_dir = self.pods_dir / namespace / f"{job_name}-{suffix}"
            pod = self.store.create("v1", "Pod", attempt_pod(job, pod_dir.name, pod_dir / "container.log"))
        log_path = pod_dir / "container.log"
        status = job.get("status") or {}
        if not status.get("startTime"):
            self._write_status(job, startTime=now_rfc3339())
        container = pod["spec"]["containers"][0]
        try:
            env = self.launcher.environment(pod, container)
        except EnvResolutionError as exc:
            self._set_pod_status(pod, "Pending", container_waiting_status(container["name"], str(exc)))
            return _CONFIG_ERROR_RETRY_S
        argv = self.launcher.argv(namespace, container, env)
        started_at = now_rfc3339()
        try:
            process = await self.launcher.start(argv, env, pod_dir, log_path)
        except (OSError, ValueError) as exc:
            log_path.write_text(f"failed to start {argv!r}: {exc}\n")
            terminated = container_terminated_status(
                container["name"], 128, "StartError", started_at, str(exc)
            )
            self._set_pod_status(pod, "Failed", terminated)
            self._count_attempt(job, succeeded=False)
            return 0.0
        key = (namespace, job_name)
        attempt = _Attempt(meta["uid"], namespace, pod["metadata"]["name"], process, started_at)
        self._attempts[key] = attempt
        if self.store.try_get("v1", "Pod", namespace, attempt.pod_name) is None:  # deleted while starting
            attempt.pod_deleted = True
            asyncio.get_running_loop().create_task(self._kill(attempt))
        self._set_pod_status(pod, "Running", container_running_status(container["name"], started_at))
        self._write_status(job, active=1, ready=1)
        waiter = asyncio.get_running_loop().create_task(self._await_exit(key, attempt, container["name"]))
        self._waiters.add(waiter)
        waiter.add_done_callback(self._waiters.discard)
        self._on_processes_changed()
        return None

    async def _await_exit(self, key: JobKey, attempt: _Attempt, container_name: str) -> None:
        exit_code = exit_code_of(await attempt.process.wait())
        if self._attempts.get(key) is attempt:
            del self._attempts[key]
        self._on_processes_changed()
        succeeded = exit_code == 0 and not attempt.pod_deleted
        pod = self.store.try_get("v1", "Pod", attempt.namespace, attempt.pod_name)
        if pod is not None:
            reason = "Completed" if exit_code == 0 else "Error"
            terminated = container_terminated_status(container_name, exit_code, reason, attempt.started_at)
            self._set_pod_status(pod, "Succeeded" if exit_code == 0 else "Failed", terminated)
        job = self.store.try_get("batch/v1", "Job", *key)
        counts = job is not None and not _is_gone_or_replaced(job, attempt) and not attempt.uncounted
        if job is not None and counts and not job_finished(job.get("status") or {}):
            self._count_attempt(job, succeeded=succeeded)
        self._queue.enqueue(key)

    def _count_attempt(self, job: dict[str, Any], *, succeeded: bool) -> None:
        status = job.get("status") or {}
        field = "succeeded" if succeeded else "failed"
        if not succeeded:
            self._last_failure[job["metadata"]["uid"]] = time.monotonic()
        self._write_status(job, **{field: int(status.get(field) or 0) + 1}, active=0, ready=0)

    def _set_pod_status(self, pod: dict[str, Any], phase: str, container_status: dict[str, Any]) -> None:
        current = self.store.try_get("v1", "Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"])
        if current is None:
            return
        previous = current.get("status") or {}
        not_ready_reason = "PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady"
        current["status"] = {
            **previous,
            "phase": phase,
            "hostIP": "127.0.0.1",
            "startTime": previous.get("startTime") or now_rfc3339(),
            "containerStatuses": [container_status],
            "conditions": pod_conditions(phase == "Running", previous.get("conditions"), not_ready_reason),
        }
        self.store.update("v1", "Pod", current, status=True)

    async def _kill(self, attempt: _Attempt, *, delete_pod: bool = False) -> None:
        """SIGTERM to the attempt's process group, SIGKILL after the grace period (never by name)."""
        await kill_process_group(attempt.process, self.kill_grace_s)
        if delete_pod and self.store.try_get("v1", "Pod", attempt.namespace, attempt.pod_name) is not None:
            attempt.pod_deleted = True
            self.store.delete("v1", "Pod", attempt.namespace, attempt.pod_name)


def _is_gone_or_replaced(job: Mapping[str, Any], attempt: _Attempt) -> bool:
    meta = job["metadata"]
    return meta["uid"] != attempt.job_uid or bool(meta.get("deletionTimestamp"))
