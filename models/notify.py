"""`raypilot.io/notify`: webhook notifications of a RayService's upgrades and a RayJob's outcome (issue #34;
docs/contract.md §9, docs/notifications.md).

The annotation holds YAML or JSON, so the manifest stays valid for KubeRay, and is checked like the spec: a
bad value rejects the manifest with a message naming the field, and nothing is created.

    secretRef: {name: hooks, key: url}   # a Secret in the object's namespace; key defaults to "url"
    events: [promoted, rolled-back, failed]   # default: every event of the object's kind
    format: cloudevents                  # or slack

The annotation replaces the worker's cluster-wide default (`RAYPILOT_NOTIFY`, models/notify_default.py) for
its object; `{events: []}` (no `secretRef` needed) sends nothing for it.

The webhook URL itself is never in the manifest: only the worker's activity reads it from the Secret, so it
never enters a workflow's history.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from pydantic import Field

from models.base import SpecModel
from models.naming import KIND_RAYJOB, KIND_RAYSERVICE
from models.yaml_annotation import annotation_model

__all__ = [
    "ANNOTATION_NOTIFY",
    "EVENTS_OF_KIND",
    "NotifyEvent",
    "NotifyFormat",
    "NotifySettings",
    "SecretKeyRef",
    "notify_error",
    "notify_settings",
]

ANNOTATION_NOTIFY: Final = "raypilot.io/notify"
DEFAULT_SECRET_KEY: Final = "url"


class NotifyEvent(StrEnum):
    """What a notification tells; its CloudEvents type is `io.raypilot.<kind>.<event>`."""

    # A RayService's upgrade.
    STARTED = "started"
    STEP = "step"
    PAUSED = "paused"
    PROMOTED = "promoted"
    ROLLED_BACK = "rolled-back"
    # An upgrade judged failing (a gate, a deadline, an unhealthy cluster), or a RayJob that failed for good.
    FAILED = "failed"
    # A RayJob.
    COMPLETE = "complete"
    RETRYING = "retrying"


class NotifyFormat(StrEnum):
    CLOUDEVENTS = "cloudevents"
    SLACK = "slack"


_RAYSERVICE_EVENTS: Final = (
    NotifyEvent.STARTED,
    NotifyEvent.STEP,
    NotifyEvent.PAUSED,
    NotifyEvent.PROMOTED,
    NotifyEvent.ROLLED_BACK,
    NotifyEvent.FAILED,
)
_RAYJOB_EVENTS: Final = (NotifyEvent.COMPLETE, NotifyEvent.FAILED, NotifyEvent.RETRYING)
EVENTS_OF_KIND: Final[Mapping[str, tuple[NotifyEvent, ...]]] = {
    KIND_RAYSERVICE: _RAYSERVICE_EVENTS,
    KIND_RAYJOB: _RAYJOB_EVENTS,
}


class SecretKeyRef(SpecModel):
    """The Secret (in the object's own namespace) and its key that hold the webhook URL."""

    name: str = Field(min_length=1)
    key: str = Field(default=DEFAULT_SECRET_KEY, min_length=1)


class NotifySettings(SpecModel):
    # None only with `events: []` (`notify_settings` checks it): that object sends nothing.
    secret_ref: SecretKeyRef | None = None
    # None: every event of the object's kind; []: none (off for this object, whatever the default says).
    events: list[NotifyEvent] | None = None
    format: NotifyFormat = NotifyFormat.CLOUDEVENTS

    @property
    def turns_off(self) -> bool:
        return self.events == []


def notify_settings(annotations: Mapping[str, str], kind: str) -> NotifySettings | None:
    """The annotation read and checked for an object of `kind` (None without it); ValueError with a message
    naming the field. An event that cannot happen to that kind (`complete` on a RayService) is an error too:
    it would never be sent. The default of the worker (models/notify_default.py) plays no part here: an
    annotation is valid or not whatever the worker's setting."""
    settings = annotation_model(
        annotations, ANNOTATION_NOTIFY, "{secretRef: {name: hooks, key: url}}", NotifySettings
    )
    if settings is None:
        return None
    if settings.secret_ref is None and not settings.turns_off:
        raise ValueError(
            f"{ANNOTATION_NOTIFY}: secretRef: Field required (only {{events: []}}, which sends nothing, "
            "goes without it)"
        )
    allowed = EVENTS_OF_KIND[kind]
    for index, event in enumerate(settings.events or ()):
        if event not in allowed:
            names = ", ".join(allowed)
            raise ValueError(
                f'{ANNOTATION_NOTIFY}: events[{index}]: "{event.value}" never happens to a {kind} '
                f"(its events: {names})"
            )
    return settings


def notify_error(annotations: Mapping[str, str] | None, kind: str) -> str | None:
    """Why the annotation is rejected, or None."""
    try:
        notify_settings(annotations or {}, kind)
    except ValueError as problem:
        return str(problem)
    return None
