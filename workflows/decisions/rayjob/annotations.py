"""The `raypilot.io/` annotations of a RayJob (raypilot's extensions beyond KubeRay), checked before anything
is created: the first problem found, with a message naming the annotation and field, or None."""

from __future__ import annotations

from models.rayjob import RayJob
from workflows.decisions.rayjob.leftovers import cleanup_after_problem
from workflows.decisions.rayjob.retry_policy import retry_policy_problem

__all__ = ["raypilot_annotation_problem"]


def raypilot_annotation_problem(job: RayJob) -> str | None:
    """Why one of the RayJob's raypilot.io/ annotations is unusable; None when all are absent or valid."""
    return cleanup_after_problem(job) or retry_policy_problem(job)
