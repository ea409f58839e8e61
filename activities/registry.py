"""The one list of activities the worker registers, bound to the clients they share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.admission import AdmissionActivities
from activities.analysis import AnalysisActivities
from activities.config import read_operator_config
from activities.cronjob_runs import CronJobRunActivities
from activities.dashboard import DashboardActivities
from activities.dependencies import ActivityDependencies, dashboard_access_from_env
from activities.driver_log import DriverLogActivities
from activities.gateway import GatewayActivities
from activities.kubernetes.clusters import RayClusterActivities, ServiceActivities
from activities.kubernetes.events import EventActivities, OwnershipActivities
from activities.kubernetes.observer import KubernetesObserverActivities
from activities.kubernetes.workloads import WorkloadActivities
from activities.notify import NotifyActivities
from activities.observer import ObserverActivities
from activities.replica_ranks import ReplicaRankActivities
from activities.serve_connections import ServeConnectionActivities
from activities.serve_drain import ServeDrainActivities
from activities.temporal_runs import TemporalRunActivities
from activities.waits import DashboardWaits, KubernetesWaits

__all__ = ["ActivityDependencies", "activity_methods", "build_activities", "dashboard_access_from_env"]


def build_activities(dependencies: ActivityDependencies) -> list[Callable[..., Any]]:
    """Every activity raypilot registers, bound to the shared clients."""
    instances: list[object] = [
        RayClusterActivities(dependencies),
        ServiceActivities(dependencies),
        WorkloadActivities(dependencies),
        EventActivities(dependencies),
        OwnershipActivities(dependencies),
        GatewayActivities(dependencies),
        DashboardActivities(dependencies),
        DriverLogActivities(dependencies),
        ReplicaRankActivities(dependencies),
        ServeDrainActivities(dependencies),
        ServeConnectionActivities(dependencies),
        TemporalRunActivities(dependencies),
        CronJobRunActivities(dependencies),
        AdmissionActivities(dependencies),
        KubernetesWaits(dependencies),
        DashboardWaits(dependencies),
        ObserverActivities(dependencies),
        AnalysisActivities(dependencies),
        KubernetesObserverActivities(dependencies),
        NotifyActivities(dependencies),
    ]
    activities: list[Callable[..., Any]] = [read_operator_config]
    for instance in instances:
        activities.extend(activity_methods(instance))
    return activities


def activity_methods(instance: object) -> list[Callable[..., Any]]:
    """The bound methods of `instance` that are activity definitions, in definition order."""
    found = []
    for name in type(instance).__dict__:
        method = getattr(instance, name)
        if callable(method) and hasattr(method, "__temporal_activity_definition"):
            found.append(method)
    return found
