"""A RayJob as an object that outlives its run: which run holds it, what `raypilot apply` does, which
earlier run a new one inherits, and which existing objects a run may adopt."""

from __future__ import annotations

import pytest

from models.manifest import parse_rayjob
from models.naming import is_owned_by_this_rayjob
from wire.kubernetes import EarlierRun
from workflows.decisions.rayjob.object import (
    MEMO_GENERATION,
    MEMO_INHERITED_FROM,
    MEMO_OUTCOME,
    MEMO_SPEC_HASH,
    ApplyDecision,
    ReusePolicy,
    RunState,
    apply_decision,
    holds_object,
    inherits_object,
    outcome_memo,
    rayjob_spec_hash,
)

R = RunState


@pytest.mark.parametrize(
    ("state", "outcome", "holds"),
    [
        (R.RUNNING, None, True),
        (R.COMPLETED, "finished", True),
        (R.COMPLETED, None, True),  # an older run without the memo
        (R.COMPLETED, "deleted", False),
        (R.FAILED, None, False),  # e.g. validation failed: the fixed manifest may run
        (R.FAILED, "finished", False),
        (R.TERMINATED, None, False),
        (R.CANCELED, None, False),
        (R.TIMED_OUT, None, False),
        (R.CONTINUED_AS_NEW, None, False),
    ],
)
def test_holds_object(state: RunState, outcome: str | None, holds: bool) -> None:
    assert holds_object(state, outcome) is holds


@pytest.mark.parametrize(
    ("latest", "outcome", "expected"),
    [
        (None, None, ApplyDecision(False, ReusePolicy.ALLOW_DUPLICATE)),
        (R.COMPLETED, "finished", ApplyDecision(True)),
        (R.COMPLETED, None, ApplyDecision(True)),
        (R.COMPLETED, "deleted", ApplyDecision(False, ReusePolicy.ALLOW_DUPLICATE)),
        # Running: update-with-start uses it; should it complete meanwhile, the start is refused.
        (R.RUNNING, None, ApplyDecision(False, ReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY)),
        (R.FAILED, None, ApplyDecision(False, ReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY)),
        (R.TERMINATED, None, ApplyDecision(False, ReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY)),
        (R.TIMED_OUT, None, ApplyDecision(False, ReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY)),
    ],
)
def test_apply_decision(latest: RunState | None, outcome: str | None, expected: ApplyDecision) -> None:
    assert apply_decision(latest, outcome) == expected


@pytest.mark.parametrize(
    ("earlier", "inherits"),
    [
        (None, False),
        (EarlierRun("a", "COMPLETED", "finished", 1, "h", {"jobStatus": "SUCCEEDED"}), True),
        (EarlierRun("a", "COMPLETED", None, 0, "", {"jobStatus": "SUCCEEDED"}), True),  # an older run
        (EarlierRun("a", "COMPLETED", "deleted", 1, "h", {"jobStatus": "SUCCEEDED"}), False),
        (EarlierRun("a", "FAILED"), False),
        (EarlierRun("a", "TERMINATED"), False),
        (EarlierRun("a", "COMPLETED", "finished", 1, "h", None), False),  # no final status to take over
    ],
)
def test_inherits_object(earlier: EarlierRun | None, inherits: bool) -> None:
    assert inherits_object(earlier) is inherits


def test_outcome_memo() -> None:
    assert outcome_memo(deleted=False, generation=2, spec_hash="h") == {
        MEMO_OUTCOME: "finished", MEMO_GENERATION: 2, MEMO_SPEC_HASH: "h"
    }  # fmt: skip
    assert outcome_memo(deleted=True, generation=1, spec_hash="h")[MEMO_OUTCOME] == "deleted"
    inherited = outcome_memo(deleted=False, generation=1, spec_hash="h", inherited_from="r")
    assert inherited[MEMO_INHERITED_FROM] == "r"


def _rayjob(entrypoint: str) -> dict[str, object]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "labels": {"team": "a"}},
        "spec": {"entrypoint": entrypoint, "shutdownAfterJobFinishes": True},
    }


def test_spec_hash_tells_a_changed_spec_from_the_same_one() -> None:
    same = rayjob_spec_hash(parse_rayjob(_rayjob("python a.py")))
    assert rayjob_spec_hash(parse_rayjob(_rayjob("python a.py"))) == same
    relabelled = _rayjob("python a.py")
    relabelled["metadata"] = {"name": "j", "labels": {"team": "b"}}
    assert rayjob_spec_hash(parse_rayjob(relabelled)) == same  # metadata is not the spec
    assert rayjob_spec_hash(parse_rayjob(_rayjob("python b.py"))) != same


@pytest.mark.parametrize(
    ("annotations", "uid", "owned"),
    [
        ({"raypilot.io/rayjob-uid": "run-1"}, "run-1", True),  # this run's create, retried
        ({"raypilot.io/rayjob-uid": "run-1"}, "run-2", False),  # an earlier run's leftover
        ({"raypilot.io/workflow-id": "rayjob/ns/j"}, "run-2", False),  # made by an older raypilot
        (None, "run-2", False),
        ({"raypilot.io/rayjob-uid": ""}, "", False),
    ],
)
def test_is_owned_by_this_rayjob(annotations: dict[str, str] | None, uid: str, owned: bool) -> None:
    assert is_owned_by_this_rayjob(annotations, uid) is owned
