"""Each typed stub in `wire.stubs` matches the activity the worker registers under its name: same parameter
types and result type, and every registered activity has exactly one stub. A workflow that type-checks
against the stubs therefore sends what the activity takes and decodes what it returns."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest
from temporalio import activity

from activities.registry import ActivityDependencies, build_activities
from wire import stubs


def signature_types(fn: Callable[..., Any]) -> tuple[list[Any], Any]:
    hints = typing.get_type_hints(fn)
    parameters = [hints[name] for name in inspect.signature(fn).parameters]
    return parameters, hints.get("return")


def stub_definitions() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    for value in vars(stubs).values():
        definition = activity._Definition.from_callable(value) if callable(value) else None
        if definition is not None:
            assert definition.name not in found, f"two stubs for {definition.name}"
            found[definition.name] = value
    return found


async def test_every_registered_activity_has_a_stub_of_the_same_types() -> None:
    dependencies = ActivityDependencies.from_env({})
    try:
        registered = {
            activity._Definition.must_from_callable(fn).name: fn for fn in build_activities(dependencies)
        }
    finally:
        await dependencies.aclose()
    declared = stub_definitions()
    assert set(declared) == set(registered)
    for name, implementation in registered.items():
        assert signature_types(declared[name]) == signature_types(implementation), name


async def test_a_stub_is_never_run() -> None:
    # A stub registered on a worker by mistake fails loudly instead of doing nothing.
    with pytest.raises(NotImplementedError):
        await stubs.get_raycluster(stubs.ObjectKey("default", "x"))
