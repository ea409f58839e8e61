"""The bodies a raypilot.io/notify webhook gets (wire/notify.py): CloudEvents 1.0 in structured mode, or a
Slack-compatible text; ids fixed by the workflow id, its first run id and the position."""

from __future__ import annotations

import pytest

from models.naming import KIND_RAYJOB, KIND_RAYSERVICE
from models.notify import NotifyEvent, NotifyFormat, notify_settings
from models.notify_default import Webhook, webhook_for
from wire.notify import (
    CLOUDEVENTS_CONTENT_TYPE,
    JSON_CONTENT_TYPE,
    NotifiedObject,
    NotifyMoment,
    notification_request,
    webhook_body,
)

SERVICE = NotifiedObject(KIND_RAYSERVICE, "prod", "svc", "rayservice/prod/svc", "run-1")
JOB = NotifiedObject(KIND_RAYJOB, "batch", "nightly", "rayjob/batch/nightly", "run-9")
PROMOTED = NotifyMoment(NotifyEvent.PROMOTED, "RayCluster b is promoted.", {"activeCluster": "b"})
COMPLETE = NotifyMoment(NotifyEvent.COMPLETE, "The RayJob is complete.", {"succeeded": 1})
TIME = "2026-01-01T00:00:00Z"


def annotation(body_format: str) -> dict[str, str]:
    return {"raypilot.io/notify": f"{{secretRef: {{name: hooks, key: url}}, format: {body_format}}}"}


def webhook_of(annotations: dict[str, str], kind: str) -> Webhook:
    """The webhook of an object with these annotations on a worker without RAYPILOT_NOTIFY."""
    webhook = webhook_for(kind, notify_settings(annotations, kind), None)
    assert webhook is not None
    return webhook


@pytest.mark.parametrize(
    ("target", "moment", "position", "expected"),
    [
        (
            SERVICE,
            PROMOTED,
            3,
            {
                "specversion": "1.0",
                "id": "rayservice/prod/svc/run-1/3",
                "source": "/raypilot/rayservice/prod/svc",
                "type": "io.raypilot.rayservice.promoted",
                "subject": "prod/svc",
                "time": TIME,
                "datacontenttype": "application/json",
                "data": {
                    "kind": "RayService",
                    "namespace": "prod",
                    "name": "svc",
                    "workflowId": "rayservice/prod/svc",
                    "event": "promoted",
                    "message": "RayCluster b is promoted.",
                    "activeCluster": "b",
                },
            },
        ),
        (
            JOB,
            COMPLETE,
            1,
            {
                "specversion": "1.0",
                "id": "rayjob/batch/nightly/run-9/1",
                "source": "/raypilot/rayjob/batch/nightly",
                "type": "io.raypilot.rayjob.complete",
                "subject": "batch/nightly",
                "time": TIME,
                "datacontenttype": "application/json",
                "data": {
                    "kind": "RayJob",
                    "namespace": "batch",
                    "name": "nightly",
                    "workflowId": "rayjob/batch/nightly",
                    "event": "complete",
                    "message": "The RayJob is complete.",
                    "succeeded": 1,
                },
            },
        ),
    ],
    ids=["rayservice", "rayjob"],
)
def test_cloudevents_body(
    target: NotifiedObject, moment: NotifyMoment, position: int, expected: dict[str, object]
) -> None:
    webhook = webhook_of(annotation("cloudevents"), target.kind)
    request = notification_request(webhook, target, moment, position, TIME)
    assert (request.secret_name, request.secret_key, request.secret_namespace) == ("hooks", "url", "")
    assert request.secret_namespace_or_own() == target.namespace
    assert webhook_body(request) == (CLOUDEVENTS_CONTENT_TYPE, expected)


@pytest.mark.parametrize(
    ("target", "moment", "text"),
    [
        (
            SERVICE,
            PROMOTED,
            ":white_check_mark: *RayService prod/svc* promoted: RayCluster b is promoted. "
            "(rayservice/prod/svc/run-1/2)",
        ),
        (
            JOB,
            NotifyMoment(NotifyEvent.RETRYING, "The RayJob failed and is retried."),
            ":repeat: *RayJob batch/nightly* retrying: The RayJob failed and is retried. "
            "(rayjob/batch/nightly/run-9/2)",
        ),
    ],
    ids=["rayservice", "rayjob"],
)
def test_slack_body(target: NotifiedObject, moment: NotifyMoment, text: str) -> None:
    webhook = webhook_of(annotation("slack"), target.kind)
    request = notification_request(webhook, target, moment, 2, TIME)
    assert webhook_body(request) == (JSON_CONTENT_TYPE, {"text": text})


def test_the_id_is_the_same_for_the_same_position_and_differs_for_another() -> None:
    webhook = webhook_of(annotation("cloudevents"), KIND_RAYSERVICE)
    first = notification_request(webhook, SERVICE, PROMOTED, 1, TIME).notification.id
    again = notification_request(webhook, SERVICE, PROMOTED, 1, "2026-01-02T00:00:00Z").notification.id
    other = notification_request(webhook, SERVICE, PROMOTED, 2, TIME).notification.id
    recreated = NotifiedObject(KIND_RAYSERVICE, "prod", "svc", "rayservice/prod/svc", "run-2")
    assert first == again != other
    assert notification_request(webhook, recreated, PROMOTED, 1, TIME).notification.id != first


def test_a_default_in_another_namespace_names_it_in_the_request() -> None:
    webhook = Webhook("raypilot", "hooks", "url", (NotifyEvent.PROMOTED,), NotifyFormat.SLACK)
    request = notification_request(webhook, SERVICE, PROMOTED, 1, TIME)
    assert (request.secret_namespace, request.secret_name, request.format) == ("raypilot", "hooks", "slack")
    assert request.secret_namespace_or_own() == "raypilot"
    assert request.notification.namespace == "prod"  # the object's, in the body
