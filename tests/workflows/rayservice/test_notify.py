"""raypilot.io/notify on a RayService (issue #34), time-skipping with fake activities: an incremental
upgrade sends started, its steps and promoted, in order, with ids from the workflow id, its first run and
the position; an abort sends rolled-back; without the annotation nothing is sent; each request names
the Secret that holds the URL (only the activity reads it); a bad value fails the run, creating nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from models.notify import ANNOTATION_NOTIFY
from models.operator import OperatorConfig
from raypilot.testing.rayservice_scenarios import (
    INCREMENTAL,
    Handle,
    eventually,
    rayservice_manifest,
    running_rayservice,
    status_of,
    until_ready,
)
from raypilot.testing.rayservice_world import FakeRayWorld
from tests.workflows.notify_support import recording_webhook
from tests.workflows.rayservice.upgrade_support import (
    apply,
    cluster_deleted,
    pending_of,
    routed,
    serving,
    status_when,
    traffic_moved_to_pending,
)
from wire import names
from wire.notify import SendNotification

NOTIFY = {ANNOTATION_NOTIFY: '{"secretRef": {"name": "hooks", "key": "url"}}'}


class NotifyingWorld(FakeRayWorld):
    """The fake world with a webhook activity that keeps what it was asked to send."""

    def __init__(self, config: OperatorConfig | None = None) -> None:
        super().__init__(config)
        self.sent: list[SendNotification] = []

    def activities(self) -> list[Any]:
        return [*super().activities(), recording_webhook(self.sent)]

    def notified(self) -> list[str]:
        return [request.notification.event for request in self.sent]


def manifest(version: str = "v1", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return rayservice_manifest(
        version=version, strategy=INCREMENTAL, autoscaling=True, deletion_delay=5, annotations=annotations
    )


async def history_text(handle: Handle) -> str:
    return json.dumps((await handle.fetch_history()).to_json_dict())


async def test_an_upgrade_sends_started_steps_and_promoted_in_order(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    env, world = time_skipping_env, NotifyingWorld()
    async with serving(env, world, manifest(annotations=NOTIFY)) as (handle, old):
        assert world.sent == []  # the first deployment is no upgrade
        await eventually(env, routed(world))
        await apply(handle, manifest("v2", NOTIFY))
        new = pending_of(await status_when(env, handle, traffic_moved_to_pending))
        final = await until_ready(env, handle)
        await eventually(env, cluster_deleted(world, old))
        run_id = (await handle.describe()).run_id
    assert final["activeServiceStatus"]["rayClusterName"] == new
    events = world.notified()
    assert events[0] == "started"
    assert events[-1] == "promoted"
    steps = events[1:-1]
    assert steps
    assert set(steps) == {"step"}
    traffic = [request.notification.details["trafficPercent"] for request in world.sent[1:-1]]
    assert traffic == sorted(traffic)
    ids = [request.notification.id for request in world.sent]
    assert ids == [f"rayservice/default/svc/{run_id}/{n}" for n in range(1, len(events) + 1)]
    assert world.sent[0].notification.details == {"activeCluster": old, "pendingCluster": new}
    assert {(r.secret_name, r.secret_key, r.format) for r in world.sent} == {("hooks", "url", "cloudevents")}


async def test_an_abort_sends_rolled_back(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, NotifyingWorld()
    async with serving(env, world, manifest(annotations=NOTIFY)) as (handle, old):
        await eventually(env, routed(world))
        await apply(handle, manifest("v2", NOTIFY))
        new = pending_of(await status_when(env, handle, traffic_moved_to_pending))
        await handle.execute_update("abort", result_type=dict)
        await eventually(env, cluster_deleted(world, new))
        final = await until_ready(env, handle)
    assert final["activeServiceStatus"]["rayClusterName"] == old
    events = world.notified()
    assert events[0] == "started"
    assert events[-1] == "rolled-back"
    assert "promoted" not in events
    assert world.sent[-1].notification.details == {"activeCluster": old, "droppedCluster": new}


async def test_only_the_events_asked_for_are_sent(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, NotifyingWorld()
    only = {ANNOTATION_NOTIFY: "{secretRef: {name: hooks}, events: [promoted], format: slack}"}
    async with serving(env, world, manifest(annotations=only)) as (handle, _):
        await eventually(env, routed(world))
        await apply(handle, manifest("v2", only))
        await until_ready(env, handle)
    assert world.notified() == ["promoted"]
    assert world.sent[0].format == "slack"
    assert world.sent[0].notification.id.endswith("/1")


async def test_without_the_annotation_nothing_is_sent(time_skipping_env: WorkflowEnvironment) -> None:
    env, world = time_skipping_env, NotifyingWorld()
    async with serving(env, world, manifest()) as (handle, _):
        await eventually(env, routed(world))
        await apply(handle, manifest("v2"))
        await until_ready(env, handle)
        history = await history_text(handle)
        status = await status_of(handle)
    assert status["activeServiceStatus"]["rayClusterName"]
    assert world.sent == []
    assert names.SEND_NOTIFICATION not in history


async def test_a_bad_annotation_fails_the_run_creating_nothing(
    time_skipping_env: WorkflowEnvironment,
) -> None:
    world = NotifyingWorld()
    bad = {ANNOTATION_NOTIFY: "{secretRef: {name: hooks}, events: [deployed]}"}
    async with running_rayservice(time_skipping_env, world, manifest(annotations=bad)) as handle:
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
    cause = failure.value.cause
    assert isinstance(cause, ApplicationError)
    assert (cause.type, cause.non_retryable) == ("ValidationFailed", True)
    assert cause.message.startswith('raypilot.io/notify: events[0]: unsupported value "deployed"')
    assert world.log == []
    assert world.sent == []
