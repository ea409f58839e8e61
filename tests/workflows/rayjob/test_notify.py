"""raypilot.io/notify on a RayJob (issue #34), time-skipping with fake activities: a RayJob that completes,
fails, or fails and is retried sends those notifications, in order, with ids from the workflow id, its run
and the position; without the annotation nothing is sent; each request names the Secret that holds the
URL (only the activity reads it); the worker's cluster-wide default (RAYPILOT_NOTIFY) notifies a RayJob
without the annotation, and the annotation replaces it or turns it off."""

from __future__ import annotations

import json
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from models.notify import ANNOTATION_NOTIFY
from models.notify_default import NOTIFY_ENV, notify_default_from_env
from models.operator import OperatorConfig
from raypilot.testing.rayjob_scenarios import rayjob_manifest
from raypilot.testing.rayjob_world import FAILS, SUCCEEDS, FakeWorld
from tests.workflows.notify_support import recording_webhook
from tests.workflows.rayjob.rayjob_support import FakeWorker, completed_run
from wire import names
from wire.notify import SendNotification

NOTIFY = '{"secretRef": {"name": "hooks"}}'


class NotifyingWorld(FakeWorld):
    """The fake world with a webhook activity that keeps what it was asked to send."""

    sent: list[SendNotification]

    def activities(self) -> list[Any]:
        self.sent = []
        return [*super().activities(), recording_webhook(self.sent)]


def manifest(annotation: str | None, **spec: Any) -> dict[str, Any]:
    made = rayjob_manifest(**spec)
    if annotation is not None:
        made["metadata"]["annotations"] = {ANNOTATION_NOTIFY: annotation}
    return made


@pytest.mark.parametrize(
    ("scripts", "spec", "annotation", "expected", "final"),
    [
        ([SUCCEEDS], {}, NOTIFY, ["complete"], "Complete"),
        ([FAILS], {}, NOTIFY, ["failed"], "Failed"),
        ([FAILS, SUCCEEDS], {"backoffLimit": 1}, NOTIFY, ["retrying", "complete"], "Complete"),
        ([FAILS], {"backoffLimit": 1}, NOTIFY, ["retrying", "failed"], "Failed"),
        (
            [FAILS, SUCCEEDS],
            {"backoffLimit": 1},
            "{secretRef: {name: hooks}, events: [complete]}",
            ["complete"],
            "Complete",
        ),
        ([FAILS, SUCCEEDS], {"backoffLimit": 1}, None, [], "Complete"),
    ],
    ids=[
        "complete",
        "failed",
        "retried-then-complete",
        "retried-then-failed",
        "only-complete",
        "no-annotation",
    ],
)
async def test_the_outcomes_are_sent(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    scripts: list[Any],
    spec: dict[str, Any],
    annotation: str | None,
    expected: list[str],
    final: str,
) -> None:
    world = NotifyingWorld(job_scripts=scripts)
    handle, result = await completed_run(time_skipping_env, fake_worker, world, manifest(annotation, **spec))
    assert result["jobDeploymentStatus"] == final
    assert [request.notification.event for request in world.sent] == expected
    run_id = (await handle.describe()).run_id
    ids = [request.notification.id for request in world.sent]
    assert ids == [f"rayjob/default/sample/{run_id}/{n}" for n in range(1, len(expected) + 1)]
    history = json.dumps((await handle.fetch_history()).to_json_dict())
    if annotation is None:
        assert names.SEND_NOTIFICATION not in history


DEFAULT = "{secretRef: {name: cluster-hooks, namespace: raypilot}, events: [promoted, failed], format: slack}"


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (None, [("failed", "raypilot", "cluster-hooks", "slack")]),
        (NOTIFY, [("retrying", "", "hooks", "cloudevents"), ("failed", "", "hooks", "cloudevents")]),
        ("{events: []}", []),
    ],
    ids=["the-default", "the-annotation-replaces-it", "the-annotation-turns-it-off"],
)
async def test_the_cluster_wide_default(
    time_skipping_env: WorkflowEnvironment,
    fake_worker: FakeWorker,
    annotation: str | None,
    expected: list[tuple[str, str, str, str]],
) -> None:
    config = OperatorConfig(notify=notify_default_from_env({NOTIFY_ENV: DEFAULT}))
    world = NotifyingWorld(job_scripts=[FAILS], config=config)
    job = manifest(annotation, backoffLimit=1)
    handle, result = await completed_run(time_skipping_env, fake_worker, world, job)
    assert result["jobDeploymentStatus"] == "Failed"
    sent = [(r.notification.event, r.secret_namespace, r.secret_name, r.format) for r in world.sent]
    assert sent == expected  # "retrying" is no event of the default: only "failed" of its list happens
    run_id = (await handle.describe()).run_id
    assert [r.notification.id for r in world.sent] == [
        f"rayjob/default/sample/{run_id}/{n}" for n in range(1, len(expected) + 1)
    ]
    if not expected:
        assert names.SEND_NOTIFICATION not in json.dumps((await handle.fetch_history()).to_json_dict())
