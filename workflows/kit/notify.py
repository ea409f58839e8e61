"""Sending the notifications of `raypilot.io/notify` from a workflow without holding its loop (issue #34).

Each notification is sent by an activity (`stubs.send_notification`, policy `IO.NOTIFY`) awaited in an
asyncio task of the workflow: tasks are part of the workflow's deterministic event loop, so the loop goes on
reconciling while a slow or failing webhook is retried. The tasks form a chain, each starting once the one
before it finished, so a receiver gets the notifications in the order they happened.

A notification stays in the book's `unsent` list until its activity succeeded or failed for good; a
RayService run that continues as new carries the book, and the new run sends those again (same ids: the
receiver deduplicates). A workflow about to complete waits for the chain, at most `FLUSH_WITHIN`.

Which webhook an object's notifications go to is its annotation's, or without it the worker's cluster-wide
default (`RAYPILOT_NOTIFY`), which reaches the workflow in the operator configuration its run read through
an activity (so it replays the same anywhere): `webhook_for` (models/notify_default.py) decides. Without
either nothing here schedules anything, so the histories of objects without them are unchanged
(tests/replay).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Final

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.base import format_rfc3339
    from models.notify import ANNOTATION_NOTIFY, NotifySettings, notify_settings
    from models.notify_default import NotifyDefault, Webhook, webhook_for
    from wire import stubs
    from wire.notify import NotifiedObject, NotifyBook, NotifyMoment, SendNotification, notification_request

from workflows.kit.calls import IO, call

__all__ = ["FLUSH_WITHIN", "Notifier"]

# How long a completing workflow waits for notifications still being sent (a webhook that is down longer
# loses them: the workflow's end closes their retries).
FLUSH_WITHIN: Final = timedelta(minutes=10)


class Notifier:
    """The notifications of one workflow run: which ones its annotation (or the cluster-wide default) wants,
    and their sending. `default` is the run's `RAYPILOT_NOTIFY` as its operator configuration holds it (None
    before that configuration is read, or without the setting)."""

    def __init__(
        self, target: NotifiedObject, book: NotifyBook, default: Callable[[], NotifyDefault | None]
    ) -> None:
        self.target = target
        self.book = book
        self._default = default
        self._last: asyncio.Task[None] | None = None
        self._read: tuple[str | None, NotifySettings | None] = (None, None)

    def settings(self, annotations: Mapping[str, str]) -> NotifySettings | None:
        """The annotation's settings (read again only when its text changed). A manifest is validated
        before it is accepted; a value that still does not read (a run started before the check existed)
        notifies nothing (nor does the default, which the annotation was meant to replace) rather than
        failing the workflow task."""
        text = annotations.get(ANNOTATION_NOTIFY)
        if text != self._read[0]:
            try:
                settings = notify_settings(annotations, self.target.kind)
            except ValueError:
                settings = NotifySettings(events=[])
            self._read = (text, settings)
        return self._read[1]

    def webhook(self, annotations: Mapping[str, str]) -> Webhook | None:
        """Where the object's notifications go now, and which; None: nowhere."""
        return webhook_for(self.target.kind, self.settings(annotations), self._default())

    def notify(self, annotations: Mapping[str, str], moments: Sequence[NotifyMoment]) -> None:
        """Send the `moments` the object's annotation, or the cluster-wide default, asks for (none without
        either)."""
        if not moments:
            return
        webhook = self.webhook(annotations)
        if webhook is None:
            return
        for moment in moments:
            if webhook.wants(moment.event):
                self.book.made += 1
                time = format_rfc3339(workflow.now())
                request = notification_request(webhook, self.target, moment, self.book.made, time)
                self.book.unsent.append(request)
                self._chain(request)

    def send_unsent(self) -> None:
        """After a continue-as-new: send again what the run before did not confirm."""
        for request in list(self.book.unsent):
            self._chain(request)

    def _chain(self, request: SendNotification) -> None:
        self._last = asyncio.ensure_future(self._send(request, self._last))

    async def _send(self, request: SendNotification, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await previous
        notification = request.notification
        try:
            await call(stubs.send_notification, request, IO.NOTIFY, summary=f"notify {notification.event}")
        except ActivityError as error:
            workflow.logger.warning(
                "notification %s (%s) not sent: %s", notification.id, notification.event, error.cause or error
            )
        self.book.unsent = [r for r in self.book.unsent if r.notification.id != notification.id]

    async def flush(self, within: timedelta = FLUSH_WITHIN) -> None:
        """Wait (at most `within`) for the notifications still being sent."""
        last = self._last
        if last is None or last.done():
            return
        try:
            await workflow.wait_condition(last.done, timeout=within)
        except TimeoutError:
            workflow.logger.warning("%d notification(s) still unsent at the end", len(self.book.unsent))
