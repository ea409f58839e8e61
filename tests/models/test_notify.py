"""`raypilot.io/notify` (models/notify.py): what is accepted, with its defaults, and the message of each
bad value; a bad value rejects the whole manifest (validate_rayservice, validate_rayjob), creating nothing."""

from __future__ import annotations

import pytest

from models.naming import KIND_RAYJOB, KIND_RAYSERVICE
from models.notify import ANNOTATION_NOTIFY, NotifyEvent, NotifyFormat, notify_error, notify_settings
from models.rayjob import RayJob
from models.rayservice import RayService
from models.validation.rayjob import validate_rayjob
from models.validation.rayservice import validate_rayservice
from raypilot.testing.rayjob_scenarios import rayjob_manifest
from raypilot.testing.rayservice_scenarios import rayservice_manifest


@pytest.mark.parametrize(
    ("value", "kind", "secret", "key", "events", "body_format"),
    [
        ("{secretRef: {name: hooks}}", KIND_RAYSERVICE, "hooks", "url", None, NotifyFormat.CLOUDEVENTS),
        (
            '{"secretRef": {"name": "hooks", "key": "webhook"}, "events": ["promoted", "rolled-back", '
            '"failed"], "format": "slack"}',
            KIND_RAYSERVICE,
            "hooks",
            "webhook",
            [NotifyEvent.PROMOTED, NotifyEvent.ROLLED_BACK, NotifyEvent.FAILED],
            NotifyFormat.SLACK,
        ),
        (
            "secretRef:\n  name: h\nevents: [complete, retrying]\n",
            KIND_RAYJOB,
            "h",
            "url",
            [NotifyEvent.COMPLETE, NotifyEvent.RETRYING],
            NotifyFormat.CLOUDEVENTS,
        ),
        (
            "{secretRef: {name: h}, events: [failed]}",
            KIND_RAYJOB,
            "h",
            "url",
            [NotifyEvent.FAILED],
            NotifyFormat.CLOUDEVENTS,
        ),
    ],
    ids=["defaults", "json-slack", "yaml-rayjob", "failed-on-both"],
)
def test_accepted_values(
    value: str, kind: str, secret: str, key: str, events: list[NotifyEvent] | None, body_format: str
) -> None:
    settings = notify_settings({ANNOTATION_NOTIFY: value}, kind)
    assert settings is not None
    assert settings.secret_ref is not None
    assert (settings.secret_ref.name, settings.secret_ref.key) == (secret, key)
    assert settings.events == events
    assert settings.format == body_format


@pytest.mark.parametrize(
    "value", ["{events: []}", "{secretRef: {name: hooks}, events: []}", "events: []\nformat: slack\n"]
)
def test_no_events_turns_notifications_off_and_needs_no_secret(value: str) -> None:
    settings = notify_settings({ANNOTATION_NOTIFY: value}, KIND_RAYSERVICE)
    assert settings is not None
    assert settings.turns_off


def test_absent_or_blank_means_no_notifications() -> None:
    assert notify_settings({}, KIND_RAYSERVICE) is None
    assert notify_settings({ANNOTATION_NOTIFY: "  "}, KIND_RAYJOB) is None


@pytest.mark.parametrize(
    ("value", "kind", "message"),
    [
        ("[1", KIND_RAYSERVICE, "raypilot.io/notify: invalid YAML or JSON: "),
        ("hooks", KIND_RAYSERVICE, "raypilot.io/notify: must be an object, e.g. {secretRef: {name: hooks"),
        ("{events: [promoted]}", KIND_RAYSERVICE, "raypilot.io/notify: secretRef: Field required"),
        ("{secretRef: {key: url}}", KIND_RAYSERVICE, "raypilot.io/notify: secretRef.name: Field required"),
        (
            '{secretRef: {name: ""}}',
            KIND_RAYSERVICE,
            "raypilot.io/notify: secretRef.name: String should have at least 1 character",
        ),
        (
            "{secretRef: {name: h}, events: [deployed]}",
            KIND_RAYSERVICE,
            'raypilot.io/notify: events[0]: unsupported value "deployed": expected one of started, step, '
            "paused, promoted, rolled-back, failed, complete, retrying",
        ),
        (
            "{secretRef: {name: h}, format: teams}",
            KIND_RAYJOB,
            'raypilot.io/notify: format: unsupported value "teams": expected one of cloudevents, slack',
        ),
        (
            "{secretRef: {name: h}, events: [promoted, complete]}",
            KIND_RAYSERVICE,
            'raypilot.io/notify: events[1]: "complete" never happens to a RayService (its events: started, '
            "step, paused, promoted, rolled-back, failed)",
        ),
        (
            "{secretRef: {name: h}, events: [promoted]}",
            KIND_RAYJOB,
            'raypilot.io/notify: events[0]: "promoted" never happens to a RayJob (its events: complete, '
            "failed, retrying)",
        ),
        (
            "{format: slack}",
            KIND_RAYJOB,
            "raypilot.io/notify: secretRef: Field required (only {events: []}, which sends nothing, goes "
            "without it)",
        ),
        ("{secretRef: {name: h}, url: http://x}", KIND_RAYJOB, 'raypilot.io/notify: unknown field "url"'),
    ],
    ids=[
        "not-yaml",
        "not-object",
        "no-secret-ref",
        "no-secret-name",
        "empty-secret-name",
        "unknown-event",
        "unknown-format",
        "rayjob-event-on-rayservice",
        "rayservice-event-on-rayjob",
        "no-secret-ref-with-events-left-out",
        "url-inline",
    ],
)
def test_bad_values_are_named(value: str, kind: str, message: str) -> None:
    error = notify_error({ANNOTATION_NOTIFY: value}, kind)
    assert error is not None
    assert error.startswith(message)


def test_a_bad_value_rejects_the_manifest() -> None:
    bad = {ANNOTATION_NOTIFY: "{secretRef: {name: h}, format: teams}"}
    service = RayService.model_validate(rayservice_manifest(annotations=bad))
    assert "raypilot.io/notify: format" in (validate_rayservice(service) or "")
    manifest = rayjob_manifest()
    manifest["metadata"]["annotations"] = bad
    assert "raypilot.io/notify: format" in (validate_rayjob(RayJob.model_validate(manifest)) or "")
    good = {ANNOTATION_NOTIFY: "{secretRef: {name: h}}"}
    assert validate_rayservice(RayService.model_validate(rayservice_manifest(annotations=good))) is None
