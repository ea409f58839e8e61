"""The fake webhook of the workflow tests of `raypilot.io/notify`: an activity under the real name that keeps
what it was asked to send and answers 200."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import activity

from wire import names
from wire.notify import SendNotification


def recording_webhook(sent: list[SendNotification]) -> Callable[..., Any]:
    """The activity; each request it gets is appended to `sent`."""

    @activity.defn(name=names.SEND_NOTIFICATION)
    async def send_notification(request: SendNotification) -> int:
        sent.append(request)
        return 200

    return send_notification
