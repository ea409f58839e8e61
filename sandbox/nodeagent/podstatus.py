"""What the node agent reports for a pod, from what its containers did: the pod's phase, conditions and
container statuses as the kubelet computes them (pure functions, tested with tables).

A container is waiting (not started yet, or backing off before a restart), running, or terminated; the phase
follows the kubelet's rules: init containers first (Pending until all completed), then Running while any
container runs or will be restarted, Succeeded or Failed once every container has terminated for good.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "ContainerRun",
    "RunState",
    "pod_phase",
    "pod_status",
    "restart_delay",
    "should_restart",
]

# The kubelet's crash-loop back-off: 10 s, doubling, at most 5 minutes.
BACKOFF_FIRST_S = 10.0
BACKOFF_MAX_S = 300.0


class RunState(StrEnum):
    WAITING = "waiting"
    RUNNING = "running"
    TERMINATED = "terminated"


@dataclass(frozen=True)
class Termination:
    exit_code: int
    reason: str  # Completed, Error, OOMKilled, ...
    started_at: str
    finished_at: str
    message: str = ""

    def as_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "exitCode": self.exit_code,
            "reason": self.reason,
            "startedAt": self.started_at,
            "finishedAt": self.finished_at,
        }
        if self.message:
            state["message"] = self.message
        return {"terminated": state}


@dataclass(frozen=True)
class ContainerRun:
    """One container as the agent last saw it."""

    name: str
    image: str
    state: RunState = RunState.WAITING
    # waiting: ContainerCreating, PodInitializing, CrashLoopBackOff, CreateContainerConfigError
    reason: str = "ContainerCreating"
    message: str = ""
    started_at: str = ""
    ready: bool = False
    restart_count: int = 0
    terminated: Termination | None = None  # this run's end (state TERMINATED)
    last_terminated: Termination | None = None  # the previous run's end, once restarted
    started: bool = False  # the startup probe passed (or there is none) on this run

    def as_status(self) -> dict[str, Any]:
        if self.state is RunState.RUNNING:
            state: dict[str, Any] = {"running": {"startedAt": self.started_at}}
        elif self.state is RunState.TERMINATED and self.terminated is not None:
            state = self.terminated.as_state()
        else:
            waiting: dict[str, Any] = {"reason": self.reason}
            if self.message:
                waiting["message"] = self.message
            state = {"waiting": waiting}
        status: dict[str, Any] = {
            "name": self.name,
            "image": self.image,
            "imageID": "",
            "state": state,
            "lastState": self.last_terminated.as_state() if self.last_terminated else {},
            "ready": self.ready and self.state is RunState.RUNNING,
            "restartCount": self.restart_count,
            "started": self.state is RunState.RUNNING and self.started,
        }
        return status


def should_restart(restart_policy: str, exit_code: int) -> bool:
    """Whether a main container that exited is started again (the pod's restartPolicy)."""
    if restart_policy == "Never":
        return False
    if restart_policy == "OnFailure":
        return exit_code != 0
    return True


def restart_delay(restarts_so_far: int) -> float:
    """Seconds before the next start of a container that has already been restarted this many times."""
    return float(min(BACKOFF_FIRST_S * 2**restarts_so_far, BACKOFF_MAX_S))


def _done_for_good(run: ContainerRun, restart_policy: str) -> bool:
    return (
        run.state is RunState.TERMINATED
        and run.terminated is not None
        and not should_restart(restart_policy, run.terminated.exit_code)
    )


def pod_phase(restart_policy: str, init: Sequence[ContainerRun], main: Sequence[ContainerRun]) -> str:
    """Pending, Running, Succeeded or Failed, as the kubelet's getPhase decides it."""
    for run in init:
        if run.state is RunState.TERMINATED and run.terminated is not None and run.terminated.exit_code != 0:
            if restart_policy == "Never":
                return "Failed"
            return "Pending"
        if not (run.state is RunState.TERMINATED and run.terminated is not None):
            return "Pending"
    if not main or any(run.state is RunState.WAITING and run.restart_count == 0 for run in main):
        return "Pending"
    if all(_done_for_good(run, restart_policy) for run in main):
        failed = any(run.terminated is not None and run.terminated.exit_code != 0 for run in main)
        return "Failed" if failed else "Succeeded"
    return "Running"


def _condition(kind: str, true: bool, since: Mapping[str, str], now: str, reason: str = "") -> dict[str, Any]:
    condition: dict[str, Any] = {
        "type": kind,
        "status": "True" if true else "False",
        "lastProbeTime": None,
        "lastTransitionTime": since.get(f"{kind}={true}", now),
    }
    if reason and not true:
        condition["reason"] = reason
    return condition


@dataclass
class PodReport:
    """What the agent knows of one pod beyond its containers."""

    pod_ip: str
    host_ip: str
    start_time: str
    # "<condition>=<bool>" -> when it last became so (transition times stay put while nothing changes)
    transitions: dict[str, str] = field(default_factory=dict)


def pod_status(
    restart_policy: str,
    init: Sequence[ContainerRun],
    main: Sequence[ContainerRun],
    report: PodReport,
    now: str,
) -> dict[str, Any]:
    """The pod's `status` as the agent writes it. Records in `report` when each condition last changed."""
    phase = pod_phase(restart_policy, init, main)
    initialized = all(run.state is RunState.TERMINATED for run in init)
    containers_ready = bool(main) and all(run.ready and run.state is RunState.RUNNING for run in main)
    values = {
        "PodReadyToStartContainers": True,
        "Initialized": initialized,
        "ContainersReady": containers_ready,
        "Ready": containers_ready,
        "PodScheduled": True,
    }
    reasons = {
        "Initialized": "ContainersNotInitialized",
        "ContainersReady": "ContainersNotReady",
        "Ready": "ContainersNotReady",
    }
    if phase in ("Succeeded", "Failed"):
        reasons = {**reasons, "ContainersReady": "PodCompleted", "Ready": "PodCompleted"}
    for kind, value in values.items():
        report.transitions.setdefault(f"{kind}={value}", now)
        report.transitions.pop(f"{kind}={not value}", None)
    return {
        "phase": phase,
        "hostIP": report.host_ip,
        "hostIPs": [{"ip": report.host_ip}],
        "podIP": report.pod_ip,
        "podIPs": [{"ip": report.pod_ip}] if report.pod_ip else [],
        "startTime": report.start_time,
        "conditions": [
            _condition(kind, value, report.transitions, now, reasons.get(kind, ""))
            for kind, value in values.items()
        ],
        "initContainerStatuses": [run.as_status() for run in init],
        "containerStatuses": [run.as_status() for run in main],
    }
