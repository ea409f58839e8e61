"""Swapping some of a fake world's activities for a test's own fakes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from raypilot.testing.rayjob_world import FakeWorld


def activity_name(fn: Callable[..., Any]) -> str:
    name = activity._Definition.must_from_callable(fn).name
    assert name is not None, "a dynamic activity has no name to replace"
    return name


def with_fakes(world: FakeWorld, *fakes: Callable[..., Any]) -> list[Callable[..., Any]]:
    """The world's activities with `fakes` in place of those of the same names."""
    replaced = {activity_name(fake) for fake in fakes}
    return [*(fn for fn in world.activities() if activity_name(fn) not in replaced), *fakes]
