"""The worker keeps what start-up made out of later full garbage collections (raypilot/worker.py)."""

from __future__ import annotations

import gc

from raypilot.worker import freeze_startup_heap


def test_objects_made_before_the_freeze_are_not_scanned_by_later_collections() -> None:
    survivor = {"made": ["at", "start-up"]}
    garbage: list[object] = []
    garbage.append(garbage)  # a cycle only the collector frees
    del garbage
    # Nothing is unfrozen afterwards: the suite freezes between files too (tests/stalls.py), and unfreezing
    # would hand the next full collection every object of the process.
    freeze_startup_heap()
    assert gc.get_freeze_count() > 0
    assert not any(obj is survivor for obj in gc.get_objects())
    made_after = {"made": ["later"]}
    assert any(obj is made_after for obj in gc.get_objects())
