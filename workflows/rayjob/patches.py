"""The RayJob workflow's patches (`workflow.patched`): each guards a change of the workflow's commands, so
that runs started before it replay without it; and the baselines that fold them (workflows/kit/patches.py).
All are asked when a run starts, before any command (`RayJobWorkflow.run`); the patches of a part's own
change live with that part (admission, leftovers, retries).
"""

from __future__ import annotations

from typing import Final

from workflows.kit.patches import Baseline
from workflows.rayjob.admission import ADMISSION_PATCH
from workflows.rayjob.leftovers import LEFTOVER_PATCH
from workflows.rayjob.retries import RETRY_POLICY_PATCH

# Runs started before the first two replay without their commands (and complete without the memo, which
# counts as holding their object).
# A completed run records in its memo whether it still holds the RayJob object (finished) or not (deleted).
OUTCOME_MEMO_PATCH: Final = "rayjob-outcome-memo"
# A run first asks whether the newest earlier run of its id holds a finished RayJob; then it takes that over.
EARLIER_RUN_PATCH: Final = "rayjob-earlier-run-check"
# The Ray job's status comes from the cluster observer (signal `observed`) when the worker's configuration
# says so, instead of a polling wait activity; and an overdue deadline judged on the Ray job's state takes one
# fresh look at the job first.
JOB_OBSERVER_PATCH: Final = "rayjob-job-observer"
# A RayJob adopted from KubeRay (`raypilot.io/adopted-rayjob` on the manifest) continues on what KubeRay left.
# Asked only for such a manifest, which no run before the patch had, so every other history is unchanged.
ADOPTION_PATCH: Final = "rayjob-adoption"
# A run that stands for a raypilot.io object publishes its jobStatus in its memo on each change, for the
# controller's status write-back. Asked only for such a manifest: the histories of other runs are unchanged.
JOB_STATUS_MEMO_PATCH: Final = "rayjob-job-status-memo"
# An observed view replaces the job's answer only if it is newer than what that answer accounts for: a view
# held while a direct look answered never overrides the look (a stale not_found failed a finished K8sJobMode
# RayJob whose submitter was done).
ORDERED_JOB_VIEWS_PATCH: Final = "rayjob-ordered-job-views"
# The RayCluster in Initializing and the submitter Job / head Pod while running come from the namespace's
# Kubernetes observer (signal `k8s_observed`) under the same switch, instead of a wait activity each.
K8S_OBSERVER_PATCH: Final = "rayjob-k8s-observer"
# Every patch above, folded into one (workflows/kit/patches.py): a run asks only a baseline (2 history
# events instead of up to 20); a run recorded before any replays through the individual patches.
BASELINE_2026_11: Final = Baseline(
    "rayjob-baseline-2026-11",
    frozenset(
        {
            OUTCOME_MEMO_PATCH,
            EARLIER_RUN_PATCH,
            LEFTOVER_PATCH,
            RETRY_POLICY_PATCH,
            ADMISSION_PATCH,
            JOB_OBSERVER_PATCH,
            ADOPTION_PATCH,
            JOB_STATUS_MEMO_PATCH,
            ORDERED_JOB_VIEWS_PATCH,
            K8S_OBSERVER_PATCH,
        }
    ),
)
# After that baseline, each one billable action less per run (P4b): the Event of a successful create or
# delete (CreatedRayCluster, CreatedService, DeletedRayCluster, ...) is posted by the act's own activity
# instead of a record_event local activity (a marker) of its own ...
EVENTS_WITH_ACTS_PATCH: Final = "rayjob-events-with-acts"
# ... and a run reads the operator configuration and its earlier run with one local activity, not two.
ONE_START_READ_PATCH: Final = "rayjob-one-start-read"
# Both, released with the baseline that folds them: no run asks them one by one, a new run asks only this
# baseline, and a run recorded under the previous one replays through it (without these two changes).
BASELINE_2026_12: Final = Baseline(
    "rayjob-baseline-2026-12",
    BASELINE_2026_11.folded | {EVENTS_WITH_ACTS_PATCH, ONE_START_READ_PATCH},
)
# Newest first (PatchSet asks them in this order).
BASELINES: Final = (BASELINE_2026_12, BASELINE_2026_11)
