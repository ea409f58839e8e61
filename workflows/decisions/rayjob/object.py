"""A RayJob as an object that outlives its run, as a Kubernetes custom resource outlives its reconciliation.

In Kubernetes a RayJob that finished stays (Complete/Failed) until it is deleted or a DeleteSelf rule runs,
so re-applying its manifest changes nothing, and KubeRay ignores spec changes of a finished RayJob. In
raypilot the object is the latest workflow run with id `rayjob/<ns>/<name>`: it *holds* the object while it
runs, and after it completed unless its object was deleted (the `delete` update or a DeleteSelf rule). A run
that failed, was terminated, cancelled or timed out does not hold it: a re-apply may run the RayJob again.

A completed run records what it leaves behind in its memo (`raypilot.io/outcome` and the rest of
`OUTCOME_MEMO_KEYS`); a completed run without that memo (older versions) counts as holding its object.

Objects a run creates carry `raypilot.io/rayjob-uid` (the run's first execution run id), so a later run
never adopts an earlier run's submitter Job or head Service of the same name (`models.naming`'s
`is_owned_by_this_rayjob`, used by the create activities).

Everything here is pure; the CLI, the workflow and the activities decide with these functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from models.hashing import json_hash
from models.naming import MEMO_GENERATION, MEMO_INHERITED_FROM, MEMO_OUTCOME, MEMO_SPEC_HASH
from models.rayjob import RayJob
from wire.kubernetes import EarlierRun

__all__ = [
    "MEMO_GENERATION",
    "MEMO_INHERITED_FROM",
    "MEMO_OUTCOME",
    "MEMO_SPEC_HASH",
    "OUTCOME_MEMO_KEYS",
    "ApplyDecision",
    "ReusePolicy",
    "RunOutcome",
    "RunState",
    "apply_decision",
    "holds_object",
    "inherits_object",
    "outcome_memo",
    "rayjob_spec_hash",
]

OUTCOME_MEMO_KEYS: Final = (MEMO_OUTCOME, MEMO_GENERATION, MEMO_SPEC_HASH, MEMO_INHERITED_FROM)


class RunOutcome(StrEnum):
    """What a completed run left: its object (finished, as a Complete/Failed RayJob stays) or nothing."""

    FINISHED = "finished"
    DELETED = "deleted"


class RunState(StrEnum):
    """A workflow run's execution status as Temporal names it (the names of WorkflowExecutionStatus)."""

    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"
    TERMINATED = "TERMINATED"
    CONTINUED_AS_NEW = "CONTINUED_AS_NEW"
    TIMED_OUT = "TIMED_OUT"


class ReusePolicy(StrEnum):
    """The workflow id reuse policy a start must use (the names of WorkflowIDReusePolicy)."""

    ALLOW_DUPLICATE = "ALLOW_DUPLICATE"
    ALLOW_DUPLICATE_FAILED_ONLY = "ALLOW_DUPLICATE_FAILED_ONLY"


def rayjob_spec_hash(job: RayJob) -> str:
    """A hash of the RayJob's spec, to tell a re-applied manifest with the same spec from a changed one."""
    return json_hash(job.spec.model_dump(mode="json", by_alias=True, exclude_none=True))


def outcome_memo(
    *, deleted: bool, generation: int, spec_hash: str, inherited_from: str = ""
) -> dict[str, Any]:
    """The memo a completed run leaves: whether it still holds its object, and which spec it ended with."""
    memo: dict[str, Any] = {
        MEMO_OUTCOME: (RunOutcome.DELETED if deleted else RunOutcome.FINISHED).value,
        MEMO_GENERATION: generation,
        MEMO_SPEC_HASH: spec_hash,
    }
    if inherited_from:
        memo[MEMO_INHERITED_FROM] = inherited_from
    return memo


def holds_object(state: RunState, outcome: str | None) -> bool:
    """Whether a run holds the RayJob object: running, or completed without its object being deleted (no
    outcome recorded: an older run, which completed only when it finished or was deleted; as deleting did
    not remove the run then either, it counts as finished)."""
    if state == RunState.RUNNING:
        return True
    if state == RunState.COMPLETED:
        return outcome != RunOutcome.DELETED
    return False


def inherits_object(earlier: EarlierRun | None) -> bool:
    """Whether a new run of the id takes over the object of the newest earlier run instead of running the
    RayJob again: that run completed holding the object, and its final status is known."""
    if earlier is None or earlier.result is None:
        return False
    return holds_object(RunState(earlier.state), earlier.outcome)


@dataclass(frozen=True)
class ApplyDecision:
    """What `raypilot apply` does: answer "unchanged" (the latest run holds a finished object) or start
    (update-with-start) with this id reuse policy."""

    unchanged: bool
    reuse_policy: ReusePolicy = ReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY


def apply_decision(latest: RunState | None, outcome: str | None) -> ApplyDecision:
    """From the latest run of the id (None: there never was one).

    - closed and holding: unchanged, nothing starts;
    - no run, or a completed run whose object was deleted: start, ALLOW_DUPLICATE;
    - running, or a run that failed (terminated, cancelled, timed out): update-with-start with
      ALLOW_DUPLICATE_FAILED_ONLY, which makes the check atomic: a running run that completes meanwhile
      refuses the start (the CLI then answers unchanged), one that fails meanwhile lets it run again.
    """
    if latest is None:
        return ApplyDecision(unchanged=False, reuse_policy=ReusePolicy.ALLOW_DUPLICATE)
    if latest != RunState.RUNNING and holds_object(latest, outcome):
        return ApplyDecision(unchanged=True)
    if latest == RunState.COMPLETED:
        return ApplyDecision(unchanged=False, reuse_policy=ReusePolicy.ALLOW_DUPLICATE)
    return ApplyDecision(unchanged=False, reuse_policy=ReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY)
