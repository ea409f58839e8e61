"""What every stub says when run (a stub is never run, see `wire.stubs`), and `implements`, by which an
activity's implementation names its stub: it is registered under the stub's name, and mypy checks that it
takes the stub's argument and returns the stub's result (a narrower one is fine)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, Generic, TypeVar, overload

from temporalio import activity

STUB_MESSAGE: Final = "a stub: the worker runs the implementation registered under this name"

Arg = TypeVar("Arg")
Result = TypeVar("Result")
Owner = TypeVar("Owner")


def _name_of(stub: Callable[..., object]) -> str:
    name = activity._Definition.must_from_callable(stub).name
    if name is None:
        raise ValueError(f"{stub!r} is a dynamic activity: it has no name")
    return name


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
def implements(stub: Callable[[], Awaitable[Result]]) -> FunctionImplementation[Result]: ...


@overload
def implements(stub: Callable[[Arg], Awaitable[Result]]) -> MethodImplementation[Arg, Result]: ...


def implements(stub: Callable[..., Awaitable[Any]]) -> Any:
    """`@implements(stubs.get_raycluster)` on the method that does the work: registered as the stub's
    activity, its types held to the stub's by mypy."""
    if inspect.signature(stub).parameters:
        return MethodImplementation(_name_of(stub))
    return FunctionImplementation(_name_of(stub))
