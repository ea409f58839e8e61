"""How a watch reaches its observer workflow (the Ray job observer's or the Kubernetes observer's), how that
observer's activity hands one round's views to the workflows that wait for them, and how it forgets the
watches that are done.

A signal per delivery, at most `SIGNALS_IN_FLIGHT` at once (many workflows at once after a relist, but not
thousands of RPCs in flight). A workflow that is gone (NotFound) waits for nothing any more: its watch is
done. Done watches are forgotten by telling the observer workflow, the one owner of the book (one signal per
round for all of them); until it answers they stay delivered and are not sent again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Final, Protocol, TypeVar

from temporalio import activity
from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from activities.heartbeat import Heartbeater
from wire.observer import OBSERVER_HEARTBEAT_EVERY, is_replaced
from wire.watch_book import BookChanges, BookCopy

log = logging.getLogger(__name__)

SIGNALS_IN_FLIGHT: Final = 50
# The first beat one period after the attempt starts (the heartbeat timeout runs from the start; a beat at
# once tells the server nothing). See `wire.observer.OBSERVER_HEARTBEAT_EVERY`.
OBSERVER_HEARTBEAT_SECONDS: Final = OBSERVER_HEARTBEAT_EVERY.total_seconds()


class ObserverHeartbeat(Heartbeater):
    """An observer activity's heartbeat, every `period_s`, the first one period after the attempt starts: a
    round that takes long (thousands of signals after a restart, a slow dashboard) does not hold it back.
    `note` sets the details the next beats carry."""

    def __init__(self, period_s: float = OBSERVER_HEARTBEAT_SECONDS) -> None:
        super().__init__({}, lambda: period_s, first_beat_at_once=False)

    def note(self, details: Mapping[str, int]) -> None:
        self.details = dict(details)


async def register_watch(
    client: Client | None,
    observer_workflow: str,
    namespace: str,
    observer_id: str,
    signal: str,
    watch: object,
) -> bool:
    """Signal-with-start of the observer `observer_id` (workflow type `observer_workflow`, run for `namespace`
    on this activity's task queue) with `watch`: idempotent, one observer per id. False on a worker without
    a Temporal client (some embedded or test workers): the watching workflow then waits without the
    observer."""
    if client is None:
        return False
    task_queue = activity.info().task_queue
    await client.start_workflow(
        observer_workflow,
        namespace,
        id=observer_id,
        task_queue=task_queue,
        start_signal=signal,
        start_signal_args=[watch],
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
    )
    return True


W = TypeVar("W")


async def read_book(
    book: BookCopy[W, Any],
    observer: WorkflowHandle[Any, Any],
    query: str,
    changes_type: type[BookChanges[W]],
    epoch_ms: int,
) -> dict[str, W] | None:
    """Brings `book` up to what the observer workflow's `query` says changed since its version; returns the
    watches added or registered again. None when the workflow's current activity is another than the one
    of `epoch_ms`: a new worker asked for a new activity, and this one, which may be a lost attempt that
    still runs, stops."""
    changes: BookChanges[W] = await observer.query(query, book.version, result_type=changes_type)
    if is_replaced(changes.epoch_ms, epoch_ms):
        log.info("observer %s: replaced by a newer activity, stopping", observer.id)
        return None
    return book.take(changes)


class Addressed(Protocol):
    """A delivery: the workflow it goes to, and the key of the watch it answers."""

    @property
    def workflow_id(self) -> str: ...

    @property
    def key(self) -> str: ...


D = TypeVar("D", bound=Addressed)


async def signal_deliveries(
    client: Client,
    deliveries: Iterable[D],
    signal: str,
    message: Callable[[D], object],
    delivered: Callable[[D], bool],
) -> list[str]:
    """Signals each delivery's workflow with `message(delivery)`. `delivered` records a delivery that reached
    its workflow and says whether it ends the watch. Returns the keys of the watches done: their workflow
    is gone, or `delivered` said so (in the order found)."""
    gate = asyncio.Semaphore(SIGNALS_IN_FLIGHT)
    done: list[str] = []

    async def send(delivery: D) -> None:
        async with gate:
            try:
                await client.get_workflow_handle(delivery.workflow_id).signal(signal, message(delivery))
            except RPCError as error:
                if error.status != RPCStatusCode.NOT_FOUND:
                    raise
                done.append(delivery.key)  # the workflow finished: nobody waits for this watch
                return
            if delivered(delivery):
                done.append(delivery.key)

    await asyncio.gather(*(send(delivery) for delivery in deliveries))
    return done


async def unwatch_done(
    observer: WorkflowHandle[Any, Any],
    watches: MutableMapping[str, Any],
    done: Sequence[str],
    unwatch_signal: str,
) -> None:
    """Drops the `done` watches from the activity's copy and asks the observer workflow to forget them, all
    in one signal (`unwatch_signal` takes the list of keys: many RayJobs ending in one round cost the
    observer one event and one workflow task, not one each). Best effort: a lost signal leaves the watches
    delivered, and they are not sent again."""
    keys = list(dict.fromkeys(done))  # a watch both gone and finished is forgotten once
    for key in keys:
        watches.pop(key, None)
    if keys:
        with contextlib.suppress(RPCError):
            await observer.signal(unwatch_signal, keys)
