"""The one list of workflows the worker registers (each issue adds its workflow here)."""

from __future__ import annotations

from workflows.admission.workflow import RayClusterAdmissionWorkflow
from workflows.observer.kubernetes import KubernetesObserverWorkflow
from workflows.observer.workflow import RayJobObserverWorkflow
from workflows.raycronjob.workflow import RayCronJobTickWorkflow
from workflows.rayjob.workflow import RayJobWorkflow
from workflows.rayservice.workflow import RayServiceWorkflow
from workflows.upgrade_outcome.workflow import RayServiceUpgradeWorkflow

WORKFLOWS: list[type] = [
    RayJobWorkflow,
    RayServiceWorkflow,
    RayCronJobTickWorkflow,
    RayClusterAdmissionWorkflow,
    RayJobObserverWorkflow,
    KubernetesObserverWorkflow,
    RayServiceUpgradeWorkflow,
]
