"""Worker Versioning: which build of raypilot a worker runs, so that Temporal keeps each run on the code it
needs while a new build rolls out (docs/upgrading-raypilot.md).

Set `RAYPILOT_DEPLOYMENT_NAME` and `RAYPILOT_BUILD_ID` together (both unset: no versioning, every worker on
the task queue takes every task). Where they are unset, the names Temporal's worker controller injects into
the Deployments it manages (`TEMPORAL_DEPLOYMENT_NAME`, `TEMPORAL_WORKER_BUILD_ID`) count instead. With them,
every run is pinned to the build that started it (the worker's default behaviour; a behaviour per workflow
type on `@workflow.defn` would make the server refuse every task of an unversioned worker):

- A RayJob run, and a RayCronJob tick, is bounded: it finishes on its build, so a new build never replays a
  half-run job with changed code.
- A RayService lives for months, the admission queue and the observers as long as they have work: each
  continues as new once its target build changed, and the next run starts (and stays) on the new build
  (workflows/kit/builds.py). They notice at their next workflow task: a RayService at its next pass, a
  queue or an observer at its next signal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import WorkerDeploymentConfig

from raypilot.settings import SettingsError

DEPLOYMENT_NAME_ENV: Final = "RAYPILOT_DEPLOYMENT_NAME"
BUILD_ID_ENV: Final = "RAYPILOT_BUILD_ID"
# What temporal-worker-controller sets in the pods of a version it runs.
CONTROLLER_DEPLOYMENT_NAME_ENV: Final = "TEMPORAL_DEPLOYMENT_NAME"
CONTROLLER_BUILD_ID_ENV: Final = "TEMPORAL_WORKER_BUILD_ID"


def deployment_config_from_env(env: Mapping[str, str]) -> WorkerDeploymentConfig | None:
    """The worker's deployment version, or None when versioning is off (neither variable set)."""
    name = env.get(DEPLOYMENT_NAME_ENV, "").strip() or env.get(CONTROLLER_DEPLOYMENT_NAME_ENV, "").strip()
    build = env.get(BUILD_ID_ENV, "").strip() or env.get(CONTROLLER_BUILD_ID_ENV, "").strip()
    if not name and not build:
        return None
    if not name or not build:
        missing = DEPLOYMENT_NAME_ENV if not name else BUILD_ID_ENV
        raise SettingsError(
            f"{missing} is not set: set {DEPLOYMENT_NAME_ENV} and {BUILD_ID_ENV} together (or neither)"
        )
    return WorkerDeploymentConfig(
        version=WorkerDeploymentVersion(deployment_name=name, build_id=build),
        use_worker_versioning=True,
        # No workflow type names a behaviour of its own (see above): every run is pinned to its build.
        default_versioning_behavior=VersioningBehavior.PINNED,
    )
