"""Moving a long-lived workflow to a new build of raypilot (Worker Versioning, raypilot/versioning.py).

A worker with a build pins every run it starts to that build. The workflows that live on (RayService, the
admission queue, the observers) continue as new once the deployment's target build is no longer theirs,
and the next run starts on the new build. Without versioning the target never changes, so nothing here
changes a run.
"""

from __future__ import annotations

from temporalio import workflow


def target_build_changed() -> bool:
    """Whether the deployment's current build is no longer this run's (known at each workflow task)."""
    return workflow.info().is_target_worker_deployment_version_changed()


def next_run_versioning() -> workflow.ContinueAsNewVersioningBehavior | None:
    """How the next run picks its build: the deployment's current one after a change, else this run's."""
    return workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE if target_build_changed() else None
