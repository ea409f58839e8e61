"""`raypilot.io/in-place-restart: "true"` on a RayService with zero-downtime upgrades off (strategy None): a
RayCluster spec change is written to the active cluster and its Pods are restarted for real, worker group by
worker group, then the head.

KubeRay has no such thing: with strategy None it ignores the change (strategy_none.py), and its RayCluster
controller never replaces running Pods on a template change; it only recreates Pods that are gone, from the
current template. So the roll deletes Pods: one group at a time, each group's Pods together, and moves to the
next group only once the group runs its desired number of new Pods (Running and Ready, none of the deleted
ones left) and every Serve application is RUNNING with its replicas again. The head goes last: without GCS
fault tolerance Serve forgets its applications with it, and the workflow submits the config again.

The plan and its progress (`PodRestart`) are workflow state; `next_pod_restart_step` decides one step per
pass from the Pods and Serve's readiness as observed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Final

from models.meta import ConditionStatus
from models.naming import LABEL_NODE_TYPE
from models.raycluster import RayClusterSpec
from models.rayservice import RayServiceStatuses
from models.rayservice_annotations import ANNOTATION_IN_PLACE_RESTART
from workflows.decisions.rayservice.conditions import RayServiceEvent, with_condition, without_condition

__all__ = [
    "ANNOTATION_IN_PLACE_RESTART",
    "HEAD_GROUP",
    "IN_PLACE_RESTART_CONDITION",
    "PodRestart",
    "PodRestartStep",
    "desired_pods_per_group",
    "next_pod_restart_check",
    "next_pod_restart_step",
    "pod_restart_plan",
    "roll_moved_on",
    "wants_in_place_restart",
    "with_pod_restart_condition",
]

IN_PLACE_RESTART_CONDITION: Final = "InPlaceRestart"
# How often a pass checks a roll while its Pods or Serve wait has failed (otherwise the waits report).
RESTART_POLL: Final = timedelta(seconds=2)
HEAD_GROUP: Final = "headgroup"
LABEL_GROUP: Final = "ray.io/group"


def wants_in_place_restart(annotations: Mapping[str, str]) -> bool:
    return annotations.get(ANNOTATION_IN_PLACE_RESTART, "").strip().lower() == "true"


@dataclass(frozen=True)
class PodRestart:
    """A roll in progress (workflow state): the cluster, the spec hash its new Pods run, the groups in order
    (worker groups as in the spec, then the head), the current step, and the uids of the Pods deleted in it
    (empty until they are)."""

    cluster: str
    goal_hash: str
    groups: tuple[str, ...]
    step: int = 0
    replaced: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.groups[self.step]


def pod_restart_plan(cluster: str, goal_hash: str, spec: RayClusterSpec) -> PodRestart:
    """Worker groups in spec order, then the head."""
    return PodRestart(cluster, goal_hash, (*(g.group_name for g in spec.worker_group_specs), HEAD_GROUP))


def desired_pods_per_group(spec: RayClusterSpec) -> dict[str, int]:
    """Pods each group runs: clamp(replicas, min, max) x numOfHosts (0 when suspended); one head."""
    desired = {HEAD_GROUP: 1}
    for group in spec.worker_group_specs:
        replicas = min(max(group.replicas, group.min_replicas), group.max_replicas) * group.num_of_hosts
        desired[group.group_name] = 0 if group.suspend or spec.suspend else replicas
    return desired


@dataclass(frozen=True)
class PodRestartStep:
    """What this pass does: the next state (None once every group restarted), the Pods to delete now
    (name, uid), the Events to record and the progress message for the condition."""

    restart: PodRestart | None
    delete: tuple[tuple[str, str], ...]
    events: tuple[RayServiceEvent, ...]
    message: str


def _group_of(pod: Mapping[str, Any]) -> str:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return HEAD_GROUP if labels.get(LABEL_NODE_TYPE) == "head" else str(labels.get(LABEL_GROUP) or "")


def _is_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return (
        status.get("phase") == "Running"
        and ready
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def next_pod_restart_step(
    restart: PodRestart,
    pods: Sequence[Mapping[str, Any]],
    desired: Mapping[str, int],
    serve_ready: bool,
    namespace: str,
) -> PodRestartStep:
    """One step of the roll: delete the current group's Pods; or wait until the group runs `desired` new
    Pods, Ready, with none of the deleted ones left, and Serve is ready; then go to the next group."""
    group, total = restart.group, len(restart.groups)
    where = f"RayCluster {namespace}/{restart.cluster}"
    position = f"{restart.step + 1}/{total}"
    label = "the head" if group == HEAD_GROUP else f"worker group {group}"
    members = [pod for pod in pods if _group_of(pod) == group]
    if not restart.replaced:
        doomed = tuple(
            (str(pod["metadata"]["name"]), str(pod["metadata"].get("uid") or ""))
            for pod in members
            if not pod["metadata"].get("deletionTimestamp")
        )
        if not doomed:  # a group with no Pods (0 replicas) has nothing to restart
            return _advance(restart, where, label, position, namespace)
        message = f"Restarting {label} of {where} ({position}): deleting {len(doomed)} Pod(s)."
        uids = tuple(uid for _, uid in doomed)
        return PodRestartStep(
            replace(restart, replaced=uids),
            doomed,
            (RayServiceEvent("Normal", "RestartingPods", message),),
            message,
        )
    old_left = sum(1 for pod in members if (pod.get("metadata") or {}).get("uid") in restart.replaced)
    fresh = [pod for pod in members if (pod.get("metadata") or {}).get("uid") not in restart.replaced]
    ready = sum(1 for pod in fresh if _is_ready(pod))
    wanted = desired.get(group, 0)
    if old_left or ready < wanted or not serve_ready:
        serve = (
            "Serve applications RUNNING" if serve_ready else "waiting for Serve applications to be RUNNING"
        )
        message = (
            f"Restarting {label} of {where} ({position}): {ready}/{wanted} new Pod(s) ready, "
            f"{old_left} old Pod(s) left, {serve}."
        )
        return PodRestartStep(restart, (), (), message)
    return _advance(restart, where, label, position, namespace)


def _advance(restart: PodRestart, where: str, label: str, position: str, namespace: str) -> PodRestartStep:
    done = RayServiceEvent("Normal", "RestartedPods", f"Restarted {label} of {where} ({position}).")
    if restart.step + 1 >= len(restart.groups):
        message = f"Every Pod of {where} was restarted with spec hash {restart.goal_hash}."
        complete = RayServiceEvent("Normal", "InPlaceRestartComplete", message)
        return PodRestartStep(None, (), (done, complete), message)
    following = replace(restart, step=restart.step + 1, replaced=())
    message = f"Restarted {label} of {where} ({position}); next: {following.group}."
    return PodRestartStep(following, (), (done,), message)


def roll_moved_on(before: PodRestart, after: PodRestart | None) -> bool:
    """The step moved the roll to its next group without touching a Pod: nothing in the world changes, so
    no wait would wake the pass that deletes that group's Pods (it runs at once)."""
    return after is not None and after.step != before.step


def next_pod_restart_check(restarting: bool, waits_report: bool, now: datetime) -> datetime | None:
    """When a pass checks the roll in any case: never while the Pods and Serve waits report every change a
    step decides on; RESTART_POLL from now otherwise (one of them failed)."""
    return now + RESTART_POLL if restarting and not waits_report else None


def with_pod_restart_condition(
    status: RayServiceStatuses, restarting: bool, message: str, now: datetime
) -> RayServiceStatuses:
    """`InPlaceRestart` True with the progress while a roll runs, False with the last message once done
    (empty message: the condition is removed, e.g. the annotation went away)."""
    if not message:
        return without_condition(status, IN_PLACE_RESTART_CONDITION)
    value = ConditionStatus.TRUE if restarting else ConditionStatus.FALSE
    reason = "RestartingPods" if restarting else "RestartComplete"
    return with_condition(status, IN_PLACE_RESTART_CONDITION, value, reason, message, now)
