"""What an `apply` of a RayJob manifest changes: whether the spec changed (a new generation) and the RayJob
as it is afterwards."""

from __future__ import annotations

from models.rayjob import RayJob


def is_spec_changed(current: RayJob, applied: RayJob) -> bool:
    """Whether an `apply` changes the spec (Kubernetes bumps metadata.generation only then)."""
    return current.spec != applied.spec


def applied_job(current: RayJob, applied: RayJob) -> RayJob:
    """The RayJob after an accepted `apply`: the applied spec, labels and annotations; the workflow's own
    status (any status in the manifest is ignored: the workflow writes it)."""
    metadata = current.metadata.model_copy(
        update={"labels": dict(applied.metadata.labels), "annotations": dict(applied.metadata.annotations)}
    )
    return current.model_copy(update={"spec": applied.spec, "metadata": metadata})
