"""What a workflow hands the webhook activity for `raypilot.io/notify` (models/notify.py), and the two bodies
the activity posts: a CloudEvents 1.0 event (structured mode) or a Slack-compatible `{"text": ...}`.

The request names the Secret that holds the URL, never the URL: the activity reads it, so it never enters a
workflow's history. Each notification carries an id fixed by the workflow (its workflow id, its first run id
and the notification's position), so every retry of the activity, and a send repeated after a
continue-as-new, posts the same id and a receiver can deduplicate (at-least-once delivery).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from models.notify import NotifyEvent, NotifyFormat
from models.notify_default import Webhook

__all__ = [
    "CLOUDEVENTS_CONTENT_TYPE",
    "JSON_CONTENT_TYPE",
    "Details",
    "Notification",
    "NotifiedObject",
    "NotifyBook",
    "NotifyMoment",
    "SendNotification",
    "cloudevent_body",
    "notification_request",
    "slack_body",
    "webhook_body",
]

CLOUDEVENTS_CONTENT_TYPE: Final = "application/cloudevents+json; charset=utf-8"
JSON_CONTENT_TYPE: Final = "application/json"
CLOUDEVENTS_SPEC_VERSION: Final = "1.0"

Details = dict[str, str | int]


@dataclass(frozen=True)
class NotifyMoment:
    """What happened, as a workflow's decision sees it (before the notification gets its id and time)."""

    event: NotifyEvent
    message: str
    # Facts a receiver may route on: clusters, traffic percent, the job's status (JSON values).
    details: Details = field(default_factory=dict)


@dataclass(frozen=True)
class Notification:
    id: str
    event: str
    kind: str
    namespace: str
    name: str
    workflow_id: str
    # RFC3339, the workflow's time of the change.
    time: str
    message: str
    details: Details = field(default_factory=dict)


@dataclass(frozen=True)
class SendNotification:
    """POST `notification` to the URL in key `secret_key` of Secret `secret_name` in namespace
    `secret_namespace` (empty: the notification's own), as `format` says."""

    secret_name: str
    secret_key: str
    format: str
    notification: Notification
    # Last, with a default: requests recorded before the cluster-wide default existed decode as they were.
    secret_namespace: str = ""

    def secret_namespace_or_own(self) -> str:
        return self.secret_namespace or self.notification.namespace


@dataclass
class NotifyBook:
    """A workflow's notifications so far (part of its state; a RayService carries it through
    continue-as-new): how many were made, which is the next one's position, and the ones not yet sent or
    given up on, which a new run sends again."""

    made: int = 0
    unsent: list[SendNotification] = field(default_factory=list)


@dataclass(frozen=True)
class NotifiedObject:
    kind: str
    namespace: str
    name: str
    workflow_id: str
    # The first run of the workflow id's chain: a RayService deleted and made again under the same name
    # starts a new chain, so its notifications never reuse an earlier object's ids.
    first_run_id: str


def notification_request(
    webhook: Webhook, target: NotifiedObject, moment: NotifyMoment, position: int, time: str
) -> SendNotification:
    """The request for the `position`-th notification of the object (counted over its whole chain)."""
    notification = Notification(
        id=f"{target.workflow_id}/{target.first_run_id}/{position}",
        event=moment.event.value,
        kind=target.kind,
        namespace=target.namespace,
        name=target.name,
        workflow_id=target.workflow_id,
        time=time,
        message=moment.message,
        details=dict(moment.details),
    )
    return SendNotification(
        webhook.secret_name, webhook.secret_key, webhook.format.value, notification, webhook.secret_namespace
    )


def cloudevent_body(notification: Notification) -> dict[str, Any]:
    """A CloudEvents 1.0 event in structured mode (posted as application/cloudevents+json)."""
    return {
        "specversion": CLOUDEVENTS_SPEC_VERSION,
        "id": notification.id,
        "source": f"/raypilot/{notification.workflow_id}",
        "type": f"io.raypilot.{notification.kind.lower()}.{notification.event}",
        "subject": f"{notification.namespace}/{notification.name}",
        "time": notification.time,
        "datacontenttype": JSON_CONTENT_TYPE,
        "data": {
            "kind": notification.kind,
            "namespace": notification.namespace,
            "name": notification.name,
            "workflowId": notification.workflow_id,
            "event": notification.event,
            "message": notification.message,
            **notification.details,
        },
    }


_SLACK_ICONS: Final = {
    NotifyEvent.STARTED.value: ":arrows_counterclockwise:",
    NotifyEvent.STEP.value: ":arrow_right:",
    NotifyEvent.PAUSED.value: ":double_vertical_bar:",
    NotifyEvent.PROMOTED.value: ":white_check_mark:",
    NotifyEvent.ROLLED_BACK.value: ":leftwards_arrow_with_hook:",
    NotifyEvent.FAILED.value: ":x:",
    NotifyEvent.COMPLETE.value: ":white_check_mark:",
    NotifyEvent.RETRYING.value: ":repeat:",
}


def slack_body(notification: Notification) -> dict[str, Any]:
    """A Slack incoming-webhook body (also what Mattermost and Rocket.Chat take): one line of text."""
    icon = _SLACK_ICONS.get(notification.event, "")
    where = f"{notification.kind} {notification.namespace}/{notification.name}"
    return {"text": f"{icon} *{where}* {notification.event}: {notification.message} ({notification.id})"}


def webhook_body(request: SendNotification) -> tuple[str, dict[str, Any]]:
    """The Content-Type and the JSON body to post for `request`."""
    if request.format == NotifyFormat.SLACK.value:
        return JSON_CONTENT_TYPE, slack_body(request.notification)
    return CLOUDEVENTS_CONTENT_TYPE, cloudevent_body(request.notification)
