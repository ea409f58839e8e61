"""PatchSet over a chain of baselines: which patches a run asks and which paths it takes, for a new run and
for the replay of runs recorded under each baseline and before any (workflows/kit/patches.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from workflows.kit import patches
from workflows.kit.patches import Baseline, PatchSet

FIRST = Baseline("base-1", frozenset({"a", "b"}))
SECOND = Baseline("base-2", frozenset({"a", "b", "c"}))


@dataclass
class FakePatched:
    """`workflow.patched` as the SDK answers it: True for a new run (its marker is written); on replay, True
    only for a patch whose marker the recorded history has."""

    recorded: frozenset[str] | None  # None: a new run
    asked: list[str] = field(default_factory=list)

    def patched(self, patch_id: str) -> bool:
        self.asked.append(patch_id)
        return self.recorded is None or patch_id in self.recorded


Run = Callable[[frozenset[str] | None], FakePatched]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> Run:
    """A run whose history holds the given patch markers (None: a new run)."""

    def make(recorded: frozenset[str] | None) -> FakePatched:
        fake = FakePatched(recorded)
        monkeypatch.setattr(patches, "workflow", fake)
        return fake

    return make


def test_a_new_run_asks_only_the_newest_baseline(run: Run) -> None:
    fake = run(None)
    patch_set = PatchSet(SECOND, FIRST)
    assert [patch_set.has(patch_id) for patch_id in ("a", "b", "c")] == [True, True, True]
    assert fake.asked == ["base-2"]
    assert patch_set.baseline == SECOND


def test_a_new_run_asks_a_patch_released_after_the_newest_baseline(run: Run) -> None:
    fake = run(None)
    assert PatchSet(SECOND, FIRST).has("d")
    assert fake.asked == ["base-2", "d"]


def test_a_run_recorded_under_the_previous_baseline_replays_through_it(run: Run) -> None:
    # Recorded under base-1, with patch c absent (released after base-1, not asked by that run's code).
    fake = run(frozenset({"base-1"}))
    patch_set = PatchSet(SECOND, FIRST)
    assert [patch_set.has(patch_id) for patch_id in ("a", "b", "c")] == [True, True, False]
    assert fake.asked == ["base-2", "base-1", "c"]
    assert patch_set.baseline == FIRST


def test_a_run_recorded_under_the_previous_baseline_keeps_a_later_patch_it_asked(
    run: Run,
) -> None:
    fake = run(frozenset({"base-1", "c"}))
    assert PatchSet(SECOND, FIRST).has("c")
    assert fake.asked == ["base-2", "base-1", "c"]


def test_a_run_recorded_before_any_baseline_replays_through_its_patches(run: Run) -> None:
    fake = run(frozenset({"a"}))
    patch_set = PatchSet(SECOND, FIRST)
    assert [patch_set.has(patch_id) for patch_id in ("a", "b", "c")] == [True, False, False]
    assert fake.asked == ["base-2", "base-1", "a", "b", "c"]
    assert patch_set.baseline is None


def test_a_single_baseline_is_a_chain_of_one(run: Run) -> None:
    fake = run(frozenset({"base-1"}))
    patch_set = PatchSet(FIRST)
    assert patch_set.has("a")
    assert not patch_set.has("c")
    assert fake.asked == ["base-1", "c"]


def test_a_newer_baseline_must_fold_everything_the_older_one_does(run: Run) -> None:
    fake = run(None)
    with pytest.raises(ValueError, match=r"base-2 drops \['b'\] of base-1"):
        PatchSet(Baseline("base-2", frozenset({"a", "c"})), FIRST)
    with pytest.raises(ValueError, match="at least one baseline"):
        PatchSet()
    assert fake.asked == []
