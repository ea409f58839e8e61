"""`Activity`, the one declaration of an activity as workflows call it (its registered name, the type of its
argument and of its result), and `implements`, by which an activity's implementation names its declaration:
it is registered under the declared name, and mypy checks that it takes the declared argument and returns the
declared result (a narrower one is fine)."""

from __future__ import annotations

import typing
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar, overload

from temporalio import activity

Arg = TypeVar("Arg")
Result = TypeVar("Result")
Owner = TypeVar("Owner")


class _Declared:
    def __init__(self, name: str) -> None:
        self.name = name

    def _subscripted(self) -> tuple[Any, ...]:
        # Set by typing when the instance is made as `Activity[A, R](name)`: the types workflows decode into.
        declared = getattr(self, "__orig_class__", None)
        if declared is None:
            raise TypeError(f"{self.name}: declare it with its types, as Activity[Arg, Result](name)")
        return typing.get_args(declared)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class Activity(_Declared, Generic[Arg, Result]):
    """An activity of one argument: `Activity[ObjectKey, dict[str, Any] | None](names.GET_RAYCLUSTER)`."""

    @property
    def argument_type(self) -> Any:
        return self._subscripted()[0]

    @property
    def result_type(self) -> Any:
        return self._subscripted()[1]


class ActivityWithoutInput(_Declared, Generic[Result]):
    """An activity that takes no argument:
    `ActivityWithoutInput[OperatorConfig](names.READ_OPERATOR_CONFIG)`."""

    @property
    def result_type(self) -> Any:
        return self._subscripted()[0]


class MethodImplementation(Generic[Arg, Result]):
    """Decorates an activity method (sync, run on the worker's threads, or async) of one argument."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __call__(
        self, method: Callable[[Owner, Arg], Coroutine[Any, Any, Result]], /
    ) -> Callable[[Owner, Arg], Coroutine[Any, Any, Result]]: ...

    @overload
    def __call__(self, method: Callable[[Owner, Arg], Result], /) -> Callable[[Owner, Arg], Result]: ...

    def __call__(self, method: Any, /) -> Any:
        return activity.defn(name=self.name)(method)


class FunctionImplementation(Generic[Result]):
    """Decorates an activity function that takes no argument."""

    def __init__(self, name: str) -> None:
        self.name = name

    @overload
    def __call__(
        self, function: Callable[[], Coroutine[Any, Any, Result]], /
    ) -> Callable[[], Coroutine[Any, Any, Result]]: ...

    @overload
    def __call__(self, function: Callable[[], Result], /) -> Callable[[], Result]: ...

    def __call__(self, function: Any, /) -> Any:
        return activity.defn(name=self.name)(function)


@overload
def implements(declared: ActivityWithoutInput[Result]) -> FunctionImplementation[Result]: ...


@overload
def implements(declared: Activity[Arg, Result]) -> MethodImplementation[Arg, Result]: ...


def implements(declared: Activity[Any, Any] | ActivityWithoutInput[Any]) -> Any:
    """`@implements(stubs.get_raycluster)` on the method that does the work: registered under the declared
    name, its types held to the declared ones by mypy."""
    if isinstance(declared, ActivityWithoutInput):
        return FunctionImplementation(declared.name)
    return MethodImplementation(declared.name)
