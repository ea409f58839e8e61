"""The cluster-wide default of raypilot.io/notify (RAYPILOT_NOTIFY) on a RayService, time-skipping on the
fake world: a worker whose operator configuration holds it notifies an upgrade of a RayService without the
annotation, with the default's Secret (in the namespace it names), events and format; the annotation replaces
it, and `{events: []}` turns it off for that RayService, scheduling no notification at all; the run replays
on a worker without the setting (the default is read from the history, never from the environment)."""

from __future__ import annotations

import json

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from models.notify import ANNOTATION_NOTIFY
from models.notify_default import NOTIFY_ENV, notify_default_from_env
from models.operator import OperatorConfig
from raypilot.converter import raypilot_data_converter
from raypilot.testing.rayservice_scenarios import eventually, until_ready
from tests.workflows.rayservice.test_notify import NotifyingWorld, manifest
from tests.workflows.rayservice.upgrade_support import apply, routed, serving
from wire import names
from workflows.registry import WORKFLOWS

DEFAULT = (
    "{secretRef: {name: cluster-hooks, namespace: raypilot}, events: [started, promoted], format: slack}"
)


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (
            None,
            [
                ("started", "raypilot", "cluster-hooks", "slack"),
                ("promoted", "raypilot", "cluster-hooks", "slack"),
            ],
        ),
        (
            "{secretRef: {name: hooks}, events: [promoted]}",
            [("promoted", "", "hooks", "cloudevents")],
        ),
        ("{events: []}", []),
    ],
    ids=["the-default", "the-annotation-replaces-it", "the-annotation-turns-it-off"],
)
async def test_an_upgrade_under_the_cluster_wide_default(
    time_skipping_env: WorkflowEnvironment, annotation: str | None, expected: list[tuple[str, str, str, str]]
) -> None:
    env = time_skipping_env
    world = NotifyingWorld(OperatorConfig(notify=notify_default_from_env({NOTIFY_ENV: DEFAULT})))
    annotations = {ANNOTATION_NOTIFY: annotation} if annotation is not None else None
    async with serving(env, world, manifest(annotations=annotations)) as (handle, _):
        await eventually(env, routed(world))
        await apply(handle, manifest("v2", annotations))
        await until_ready(env, handle)
        recorded = await handle.fetch_history()
        run_id = (await handle.describe()).run_id
    history = json.dumps(recorded.to_json_dict())
    sent = [(r.notification.event, r.secret_namespace, r.secret_name, r.format) for r in world.sent]
    assert sent == expected
    assert [r.notification.id for r in world.sent] == [
        f"rayservice/default/svc/{run_id}/{n}" for n in range(1, len(expected) + 1)
    ]
    assert all(r.notification.namespace == "default" for r in world.sent)  # the object's, in the body
    if not expected:
        assert names.SEND_NOTIFICATION not in history
    # The default came from the recorded operator configuration: the run replays the same commands on a
    # worker whose environment has no RAYPILOT_NOTIFY at all (nondeterminism would raise here).
    replayer = Replayer(workflows=list(WORKFLOWS), data_converter=raypilot_data_converter)
    await replayer.replay_workflow(recorded)
