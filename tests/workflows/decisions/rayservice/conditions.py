"""Reading the conditions of a status in the unit tests: the one of a type, which the test expects there."""

from __future__ import annotations

from models.meta import Condition, find_condition


def the_condition(conditions: list[Condition], condition_type: str) -> Condition:
    """The condition of `condition_type` in `conditions`; fails the test when there is none."""
    found = find_condition(conditions, condition_type)
    assert found is not None, f"no {condition_type} condition in {[c.type for c in conditions]}"
    return found
