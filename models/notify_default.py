"""The cluster-wide default of `raypilot.io/notify` (issue #34; docs/notifications.md, docs/contract.md §9):
the worker's environment variable `RAYPILOT_NOTIFY`, and which webhook an object's notifications go to once
its annotation and that default are both known.

`RAYPILOT_NOTIFY` holds the annotation's shape as YAML or JSON, plus an optional `secretRef.namespace`: one
Secret (typically in raypilot's own namespace) for every RayService and RayJob without the annotation.

    secretRef: {name: hooks, key: url, namespace: raypilot}   # namespace: default the object's own
    events: [promoted, rolled-back, failed]   # default: every event; each kind takes those it has
    format: slack                            # default cloudevents

Only the worker reads it, in the operator configuration (models/operator.py), which a workflow reads through
an activity: the value is recorded in history, replays identically on a worker with another setting, and a
workflow never reads the environment. Like the annotation it names a Secret, never the URL.

Only an administrator (who sets the worker's environment) can name a Secret in another namespace: the
annotation's `secretRef` has no `namespace`, so a user's manifest can never make the worker read a Secret
outside the object's namespace.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from pydantic import Field, field_validator

from models.base import SpecModel
from models.notify import (
    DEFAULT_SECRET_KEY,
    EVENTS_OF_KIND,
    NotifyEvent,
    NotifyFormat,
    NotifySettings,
)
from models.yaml_annotation import annotation_model

__all__ = [
    "NOTIFY_ENV",
    "DefaultSecretKeyRef",
    "NotifyDefault",
    "Webhook",
    "notify_default_from_env",
    "webhook_for",
]

NOTIFY_ENV: Final = "RAYPILOT_NOTIFY"
_NAMESPACE: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class DefaultSecretKeyRef(SpecModel):
    """The Secret of the cluster-wide default: in `namespace`, or in each object's own when it is not set."""

    name: str = Field(min_length=1)
    key: str = Field(default=DEFAULT_SECRET_KEY, min_length=1)
    namespace: str | None = None

    @field_validator("namespace")
    @classmethod
    def _namespace_name(cls, namespace: str | None) -> str | None:
        if namespace is not None and (len(namespace) > 63 or not _NAMESPACE.fullmatch(namespace)):
            raise ValueError(f"{namespace!r} is not a namespace name (a DNS-1123 label)")
        return namespace


class NotifyDefault(SpecModel):
    secret_ref: DefaultSecretKeyRef
    # None: every event (each kind takes those that can happen to it).
    events: list[NotifyEvent] | None = None
    format: NotifyFormat = NotifyFormat.CLOUDEVENTS

    @field_validator("events")
    @classmethod
    def _not_empty(cls, events: list[NotifyEvent] | None) -> list[NotifyEvent] | None:
        if events is not None and not events:
            raise ValueError(f"must name at least one event (leave {NOTIFY_ENV} unset to send none)")
        return events


def notify_default_from_env(env: Mapping[str, str]) -> NotifyDefault | None:
    """`RAYPILOT_NOTIFY` read and checked (None when unset or blank); ValueError naming the variable and the
    field, so that the worker refuses to start with a typo in it."""
    return annotation_model(env, NOTIFY_ENV, "{secretRef: {name: hooks, namespace: raypilot}}", NotifyDefault)


@dataclass(frozen=True)
class Webhook:
    """Where an object's notifications go and which of them are sent."""

    # "": the object's own namespace.
    secret_namespace: str
    secret_name: str
    secret_key: str
    events: tuple[NotifyEvent, ...]
    format: NotifyFormat

    def wants(self, event: NotifyEvent) -> bool:
        return event in self.events


def webhook_for(
    kind: str, annotation: NotifySettings | None, default: NotifyDefault | None
) -> Webhook | None:
    """The webhook of an object of `kind`, or None when it sends nothing. Its annotation, when it has one,
    decides alone (the default's fields are not merged into it: what a manifest says is all that applies to
    it) and `events: []` turns notifications off; without it the cluster-wide default applies, with the
    events of the default that can happen to `kind`."""
    allowed = EVENTS_OF_KIND[kind]
    if annotation is not None:
        if annotation.secret_ref is None or annotation.turns_off:
            return None
        events = tuple(annotation.events) if annotation.events is not None else allowed
        ref = annotation.secret_ref
        return Webhook("", ref.name, ref.key, events, annotation.format)
    if default is None:
        return None
    wanted = allowed if default.events is None else tuple(e for e in allowed if e in default.events)
    if not wanted:
        return None
    secret = default.secret_ref
    return Webhook(secret.namespace or "", secret.name, secret.key, wanted, default.format)
