"""Each activity declared in `wire.stubs` matches the activity the worker registers under its name: same
argument type and result type, and every registered activity is declared exactly once. A workflow that
type-checks against the declarations therefore sends what the activity takes and decodes what it returns."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest

from tests.activities.conftest import registered_activities
from wire import stubs
from wire.stubs.common import Activity, ActivityWithoutInput


def signature_types(fn: Callable[..., Any]) -> tuple[list[Any], Any]:
    hints = typing.get_type_hints(fn)
    parameters = [hints[name] for name in inspect.signature(fn).parameters]
    return parameters, hints.get("return")


def declared_types() -> dict[str, tuple[list[Any], Any]]:
    found: dict[str, tuple[list[Any], Any]] = {}
    for value in vars(stubs).values():
        if isinstance(value, Activity | ActivityWithoutInput):
            assert value.name not in found, f"{value.name} is declared twice"
            arguments = [value.argument_type] if isinstance(value, Activity) else []
            found[value.name] = (arguments, value.result_type)
    return found


async def test_every_registered_activity_is_declared_with_its_types() -> None:
    registered = dict(await registered_activities())
    declared = declared_types()
    assert set(declared) == set(registered)
    for name, implementation in registered.items():
        assert declared[name] == signature_types(implementation), name


def test_a_declaration_without_its_types_says_so() -> None:
    # `Activity(name)` unsubscripted would leave Temporal nothing to decode the result into.
    untyped: Activity[Any, Any] = Activity("k8s.untyped")
    with pytest.raises(TypeError, match="declare it with its types"):
        _ = untyped.result_type
