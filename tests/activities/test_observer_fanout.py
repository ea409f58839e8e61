"""How an observer activity forgets the watches one round found done: one signal to its observer workflow
with every key (once each), none when nothing is done, and a signal the server refuses is not an error of the
activity (the watches stay delivered and are not sent again)."""

from __future__ import annotations

from typing import Any

from temporalio.service import RPCError, RPCStatusCode

from activities.observer_fanout import unwatch_done

SIGNAL = "unwatch-keys"


class _Observer:
    def __init__(self, *, refuses: bool = False) -> None:
        self.refuses = refuses
        self.signals: list[tuple[str, Any]] = []

    async def signal(self, name: str, arg: Any) -> None:
        self.signals.append((name, arg))
        if self.refuses:
            raise RPCError("unavailable", RPCStatusCode.UNAVAILABLE, b"")


async def test_the_done_watches_of_a_round_go_in_one_signal() -> None:
    observer = _Observer()
    watches = {"a": 1, "b": 2, "c": 3}
    await unwatch_done(observer, watches, ["a", "c", "a"], SIGNAL)  # type: ignore[arg-type]
    assert observer.signals == [(SIGNAL, ["a", "c"])]
    assert watches == {"b": 2}


async def test_no_signal_when_nothing_is_done() -> None:
    observer = _Observer()
    watches = {"a": 1}
    await unwatch_done(observer, watches, [], SIGNAL)  # type: ignore[arg-type]
    assert observer.signals == []
    assert watches == {"a": 1}


async def test_a_refused_signal_still_drops_the_watches_from_the_copy() -> None:
    observer = _Observer(refuses=True)
    watches = {"a": 1, "b": 2}
    await unwatch_done(observer, watches, ["b"], SIGNAL)  # type: ignore[arg-type]
    assert observer.signals == [(SIGNAL, ["b"])]
    assert watches == {"a": 1}
