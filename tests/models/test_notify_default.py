"""The cluster-wide default of raypilot.io/notify (models/notify_default.py): `RAYPILOT_NOTIFY` read and
checked, with each bad value's message naming the variable and the field; and the table of which webhook an
object gets from its annotation and that default (`webhook_for`)."""

from __future__ import annotations

import re

import pytest

from models.naming import KIND_RAYJOB, KIND_RAYSERVICE
from models.notify import ANNOTATION_NOTIFY, NotifyEvent, NotifyFormat, notify_settings
from models.notify_default import NOTIFY_ENV, Webhook, notify_default_from_env, webhook_for
from models.operator import OperatorConfig, operator_config_from_env

E = NotifyEvent
CLOUDEVENTS, SLACK = NotifyFormat.CLOUDEVENTS, NotifyFormat.SLACK
RAYSERVICE_EVENTS = (E.STARTED, E.STEP, E.PAUSED, E.PROMOTED, E.ROLLED_BACK, E.FAILED)
RAYJOB_EVENTS = (E.COMPLETE, E.FAILED, E.RETRYING)

# the settings of the table
DEFAULT = "{secretRef: {name: cluster-hooks, namespace: raypilot}, format: slack}"
DEFAULT_OWN_NAMESPACE = "{secretRef: {name: cluster-hooks, key: webhook}}"
DEFAULT_SOME = "{secretRef: {name: cluster-hooks, namespace: raypilot}, events: [promoted, failed, complete]}"
DEFAULT_SERVICES_ONLY = "{secretRef: {name: cluster-hooks, namespace: raypilot}, events: [promoted]}"
OWN = "{secretRef: {name: hooks}}"
OWN_SOME = "{secretRef: {name: hooks, key: k}, events: [failed]}"
OFF = "{events: []}"


@pytest.mark.parametrize(
    ("setting", "annotation", "kind", "expected"),
    [
        (None, None, KIND_RAYSERVICE, None),
        (None, None, KIND_RAYJOB, None),
        (None, OWN, KIND_RAYSERVICE, Webhook("", "hooks", "url", RAYSERVICE_EVENTS, CLOUDEVENTS)),
        (None, OFF, KIND_RAYSERVICE, None),
        (
            DEFAULT,
            None,
            KIND_RAYSERVICE,
            Webhook("raypilot", "cluster-hooks", "url", RAYSERVICE_EVENTS, SLACK),
        ),
        (DEFAULT, None, KIND_RAYJOB, Webhook("raypilot", "cluster-hooks", "url", RAYJOB_EVENTS, SLACK)),
        (
            DEFAULT_OWN_NAMESPACE,
            None,
            KIND_RAYJOB,
            Webhook("", "cluster-hooks", "webhook", RAYJOB_EVENTS, CLOUDEVENTS),
        ),
        (
            DEFAULT_SOME,
            None,
            KIND_RAYSERVICE,
            Webhook("raypilot", "cluster-hooks", "url", (E.PROMOTED, E.FAILED), CLOUDEVENTS),
        ),
        (
            DEFAULT_SOME,
            None,
            KIND_RAYJOB,
            Webhook("raypilot", "cluster-hooks", "url", (E.COMPLETE, E.FAILED), CLOUDEVENTS),
        ),
        (DEFAULT_SERVICES_ONLY, None, KIND_RAYJOB, None),
        (DEFAULT, OWN, KIND_RAYSERVICE, Webhook("", "hooks", "url", RAYSERVICE_EVENTS, CLOUDEVENTS)),
        (DEFAULT, OWN_SOME, KIND_RAYJOB, Webhook("", "hooks", "k", (E.FAILED,), CLOUDEVENTS)),
        (DEFAULT, OFF, KIND_RAYSERVICE, None),
        (DEFAULT, OFF, KIND_RAYJOB, None),
    ],
    ids=[
        "neither-rayservice",
        "neither-rayjob",
        "annotation-alone",
        "annotation-off-alone",
        "default-rayservice",
        "default-rayjob",
        "default-in-the-object-namespace",
        "default-events-of-rayservice",
        "default-events-of-rayjob",
        "default-with-no-event-of-the-kind",
        "annotation-replaces-default",
        "annotation-replaces-default-not-merged",
        "annotation-turns-default-off-rayservice",
        "annotation-turns-default-off-rayjob",
    ],
)
def test_which_webhook_an_object_gets(
    setting: str | None, annotation: str | None, kind: str, expected: Webhook | None
) -> None:
    default = notify_default_from_env({NOTIFY_ENV: setting} if setting is not None else {})
    annotations = {ANNOTATION_NOTIFY: annotation} if annotation is not None else {}
    assert webhook_for(kind, notify_settings(annotations, kind), default) == expected


def test_the_webhook_wants_only_its_events() -> None:
    webhook = Webhook("", "hooks", "url", (E.PROMOTED, E.FAILED), CLOUDEVENTS)
    assert [event for event in E if webhook.wants(event)] == [E.PROMOTED, E.FAILED]


@pytest.mark.parametrize("value", [None, "", "   "])
def test_unset_or_blank_means_no_default(value: str | None) -> None:
    env = {NOTIFY_ENV: value} if value is not None else {}
    assert notify_default_from_env(env) is None
    assert operator_config_from_env(env).notify is None


def test_the_default_is_part_of_the_operator_configuration() -> None:
    config = operator_config_from_env({NOTIFY_ENV: DEFAULT})
    assert config.notify is not None
    assert (config.notify.secret_ref.namespace, config.notify.secret_ref.name) == (
        "raypilot",
        "cluster-hooks",
    )
    # recorded in history as JSON and read back the same; a configuration recorded without it decodes
    assert OperatorConfig.model_validate_json(config.model_dump_json()) == config
    assert OperatorConfig.model_validate({"feature_gates": {}}).notify is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[1", "RAYPILOT_NOTIFY: invalid YAML or JSON: "),
        ("hooks", "RAYPILOT_NOTIFY: must be an object, e.g. {secretRef: {name: hooks, namespace: raypilot}}"),
        ("{format: slack}", "RAYPILOT_NOTIFY: secretRef: Field required"),
        ("{secretRef: {namespace: raypilot}}", "RAYPILOT_NOTIFY: secretRef.name: Field required"),
        (
            "{secretRef: {name: h, namespace: Raypilot_1}}",
            "RAYPILOT_NOTIFY: secretRef.namespace: 'Raypilot_1' is not a namespace name (a DNS-1123 label)",
        ),
        (
            "{secretRef: {name: h}, events: []}",
            "RAYPILOT_NOTIFY: events: must name at least one event (leave RAYPILOT_NOTIFY unset to send "
            "none)",
        ),
        (
            "{secretRef: {name: h}, events: [deployed]}",
            'RAYPILOT_NOTIFY: events[0]: unsupported value "deployed": expected one of started, step, '
            "paused, promoted, rolled-back, failed, complete, retrying",
        ),
        (
            "{secretRef: {name: h}, format: teams}",
            'RAYPILOT_NOTIFY: format: unsupported value "teams": expected one of cloudevents, slack',
        ),
        ("{secretRef: {name: h}, url: https://x}", 'RAYPILOT_NOTIFY: unknown field "url"'),
    ],
    ids=[
        "not-yaml",
        "not-object",
        "no-secret-ref",
        "no-secret-name",
        "bad-namespace",
        "no-events",
        "unknown-event",
        "unknown-format",
        "url-inline",
    ],
)
def test_a_bad_setting_is_named(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        operator_config_from_env({NOTIFY_ENV: value})


def test_the_annotation_cannot_name_another_namespace() -> None:
    with pytest.raises(
        ValueError, match=re.escape('raypilot.io/notify: unknown field "secretRef.namespace"')
    ):
        notify_settings({ANNOTATION_NOTIFY: "{secretRef: {name: h, namespace: raypilot}}"}, KIND_RAYJOB)
