"""Test kits for raypilot and for platform teams testing their own policies against raypilot's workflows.

Installed as the pytest plugin `raypilot` (`raypilot.testing.plugin`): the fixtures `time_skipping_env` (a
fresh Temporal time-skipping test server: days of durable timers pass in milliseconds), `dev_server_env` and
`fake_worker`. With them, the fake worlds below run the real workflows without Kubernetes or Ray:

- RayServices (`raypilot.testing.rayservice_world`, `raypilot.testing.rayservice_scenarios`): `FakeRayWorld`
  is an in-memory Kubernetes + Ray Serve + Gateway behind fake activities registered under the real names; it
  reacts at once (a created cluster is ready, a Serve config runs its replicas; an old cluster's drain finds
  no request in flight unless `world.in_flight` says otherwise) and logs every act with its workflow time
  (`world.log`; the drain's readings in `world.in_flight_reads`). `running_rayservice(env, world,
  manifest)` runs a worker and starts the workflow; `until_ready`, `eventually` (advances workflow time until
  a probe holds), `status_of`, `condition_of` observe it; `upgrade_sequence` / `timed_sequence` list the
  traffic and capacity steps an upgrade took; `rayservice_manifest` / `incremental_manifest` build manifests
  KubeRay accepts.
- RayJobs (`raypilot.testing.rayjob_world`, `raypilot.testing.rayjob_scenarios`): `FakeWorld` (clusters,
  Services, submitter Jobs, Pods, Events and a Ray dashboard whose jobs follow a script: `SUCCEEDS`,
  `FAILS`, `RUNS_FOREVER`); `world.activities()` for `fake_worker` / `running_worker`; `rayjob_manifest`,
  `start`, `status_of` (as `rayjob_status_of`), `until_phase`.
- Replays: `raypilot.testing.replay.replay_history_file(path)` replays an exported history against the
  current code; `replay_history_files(paths)` replays several on one replaying worker.
"""

from raypilot.testing.rayjob_scenarios import rayjob_manifest, start, until_phase
from raypilot.testing.rayjob_scenarios import status_of as rayjob_status_of
from raypilot.testing.rayjob_world import FAILS, RUNS_FOREVER, SUCCEEDS, FakeWorld
from raypilot.testing.rayservice_scenarios import (
    WORKFLOW_ID,
    Handle,
    condition_of,
    eventually,
    incremental_manifest,
    rayservice_manifest,
    running_rayservice,
    status_of,
    timed_sequence,
    until_ready,
    upgrade_sequence,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from raypilot.testing.replay import replay_history_file, replay_history_files, save_history
from raypilot.testing.worker import running_worker

__all__ = [
    "FAILS",
    "RUNS_FOREVER",
    "SUCCEEDS",
    "WORKFLOW_ID",
    "FakeRayWorld",
    "FakeWorld",
    "Handle",
    "condition_of",
    "eventually",
    "incremental_manifest",
    "rayjob_manifest",
    "rayjob_status_of",
    "rayservice_manifest",
    "replay_history_file",
    "replay_history_files",
    "running_rayservice",
    "running_worker",
    "save_history",
    "start",
    "status_of",
    "timed_sequence",
    "until_phase",
    "until_ready",
    "upgrade_sequence",
]
