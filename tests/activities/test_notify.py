"""The webhook activity of raypilot.io/notify (activities/notify.py), over real HTTP: a receiver on
127.0.0.1 gets the CloudEvents (or Slack) body with its headers; a 500 is retried by the IO.NOTIFY policy
until a 200, a 400 is not retried; the URL never appears in an error.

The Secret holding the URL comes from a fake API server (an httpx.MockTransport under the worker's API server
client), not the real stack: the activity reads it with `AsyncApiServer.read_secret_value`, the read the
dashboard token already uses (and `get secrets` is exercised on the real stack by those tests)."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from aiohttp import web
from kubernetes import client
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.dependencies import ActivityDependencies
from activities.notify import NOTIFY_SECRET_MISSING, NOTIFY_WEBHOOK_REJECTED, NotifyActivities
from raypilot.testing.worker import running_worker
from tests.activities.notify_workflow import SendOneNotification
from wire.notify import Notification, SendNotification


class Receiver:
    """A webhook on 127.0.0.1 that answers each POST with the next status of `statuses` (then 200)."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.posts: list[tuple[dict[str, str], bytes]] = []
        self.url = ""

    async def answer(self, request: web.Request) -> web.Response:
        self.posts.append((dict(request.headers), await request.read()))
        status = self.statuses.pop(0) if self.statuses else 200
        return web.Response(status=status, text=f"answered {status}")


@asynccontextmanager
async def receiving(receiver: Receiver) -> AsyncIterator[Receiver]:
    app = web.Application()
    app.router.add_post("/hooks/raypilot", receiver.answer)
    runner = web.AppRunner(app)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        receiver.url = f"http://127.0.0.1:{runner.addresses[0][1]}/hooks/raypilot"
        yield receiver
    finally:
        await runner.cleanup()


def dependencies(secrets: dict[str, dict[str, str]], namespace: str = "prod") -> ActivityDependencies:
    """Real HTTP for the webhook; a fake API server that knows the Secrets `secrets` (name -> data) in
    `namespace`."""

    def api(request: httpx.Request) -> httpx.Response:
        name = request.url.path.rsplit("/", 1)[-1]
        if request.url.path.startswith(f"/api/v1/namespaces/{namespace}/secrets/") and name in secrets:
            data = {key: base64.b64encode(value.encode()).decode() for key, value in secrets[name].items()}
            return httpx.Response(200, json={"kind": "Secret", "data": data})
        return httpx.Response(404, json={"kind": "Status", "reason": "NotFound", "code": 404})

    configuration = client.Configuration()
    configuration.host = "http://apiserver.test:6443"
    return ActivityDependencies(
        env={}, kube_configuration=configuration, apiserver_transport=httpx.MockTransport(api)
    )


def request(
    body_format: str = "cloudevents", secret: str = "hooks", secret_namespace: str = ""
) -> SendNotification:
    notification = Notification(
        id="rayservice/prod/svc/run-1/2",
        event="promoted",
        kind="RayService",
        namespace="prod",
        name="svc",
        workflow_id="rayservice/prod/svc",
        time="2026-01-01T00:00:00Z",
        message="RayCluster svc-b is promoted: it serves all the traffic.",
        details={"activeCluster": "svc-b"},
    )
    return SendNotification(secret, "url", body_format, notification, secret_namespace)


async def send(deps: ActivityDependencies, send_request: SendNotification) -> int:
    result: int = await ActivityEnvironment().run(NotifyActivities(deps).send_notification, send_request)
    return result


async def test_a_cloudevent_is_posted_in_structured_mode() -> None:
    async with receiving(Receiver()) as receiver:
        deps = dependencies({"hooks": {"url": receiver.url}})
        try:
            assert await send(deps, request()) == 200
        finally:
            await deps.aclose()
    [(headers, body)] = receiver.posts
    assert headers["Content-Type"] == "application/cloudevents+json; charset=utf-8"
    event = json.loads(body)
    assert {key: event[key] for key in ("specversion", "id", "type", "source", "subject", "time")} == {
        "specversion": "1.0",
        "id": "rayservice/prod/svc/run-1/2",
        "type": "io.raypilot.rayservice.promoted",
        "source": "/raypilot/rayservice/prod/svc",
        "subject": "prod/svc",
        "time": "2026-01-01T00:00:00Z",
    }
    assert event["data"]["activeCluster"] == "svc-b"


async def test_a_slack_body_is_plain_json() -> None:
    async with receiving(Receiver()) as receiver:
        deps = dependencies({"hooks": {"url": receiver.url}})
        try:
            await send(deps, request("slack"))
        finally:
            await deps.aclose()
    [(headers, body)] = receiver.posts
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["text"].startswith(":white_check_mark: *RayService prod/svc* promoted: ")


async def test_the_cluster_wide_default_reads_its_secret_in_the_namespace_it_names() -> None:
    async with receiving(Receiver()) as receiver:
        deps = dependencies({"hooks": {"url": receiver.url}}, namespace="raypilot")
        try:
            assert await send(deps, request(secret_namespace="raypilot")) == 200
            with pytest.raises(ApplicationError) as missing:
                await send(deps, request())  # the object's own namespace (prod) has no such Secret
        finally:
            await deps.aclose()
    [(_, body)] = receiver.posts
    assert json.loads(body)["subject"] == "prod/svc"
    assert 'secret "hooks" in namespace "prod"' in missing.value.message


@pytest.mark.parametrize(
    ("status", "retryable"), [(400, False), (404, False), (301, False), (408, True), (429, True), (500, True)]
)
async def test_an_error_answer_is_classified_without_the_url(status: int, retryable: bool) -> None:
    async with receiving(Receiver(status)) as receiver:
        deps = dependencies({"hooks": {"url": receiver.url}})
        try:
            with pytest.raises(ApplicationError) as failed:
                await send(deps, request())
        finally:
            await deps.aclose()
    assert failed.value.non_retryable is not retryable
    assert f"webhook: HTTP {status}: answered {status}" in failed.value.message
    assert receiver.url not in failed.value.message
    assert "127.0.0.1" not in failed.value.message


async def test_a_missing_secret_or_a_url_that_is_not_http_says_which_secret() -> None:
    deps = dependencies({"ftp": {"url": "ftp://files.example/drop"}})
    try:
        with pytest.raises(ApplicationError) as missing:
            await send(deps, request(secret="hooks"))
        with pytest.raises(ApplicationError) as not_http:
            await send(deps, request(secret="ftp"))
    finally:
        await deps.aclose()
    assert missing.value.type == NOTIFY_SECRET_MISSING
    assert not missing.value.non_retryable  # it may be created after the object that names it
    assert 'secret "hooks" in namespace "prod" has no key url' in missing.value.message
    assert not_http.value.non_retryable
    assert "is not an http(s) URL" in not_http.value.message
    assert "ftp://" not in not_http.value.message


@asynccontextmanager
async def notifying_worker(env: WorkflowEnvironment, url: str) -> AsyncIterator[str]:
    deps = dependencies({"hooks": {"url": url}})
    try:
        activities = [NotifyActivities(deps).send_notification]
        async with running_worker(
            env.client, activities=activities, workflows=[SendOneNotification]
        ) as queue:
            yield queue
    finally:
        await deps.aclose()


async def test_a_500_is_retried_until_the_webhook_takes_it(time_skipping_env: WorkflowEnvironment) -> None:
    env = time_skipping_env
    async with receiving(Receiver(500, 503)) as receiver, notifying_worker(env, receiver.url) as queue:
        result = await env.client.execute_workflow(
            SendOneNotification.run, request(), id="notify-retried", task_queue=queue
        )
    assert result == 200
    ids = [json.loads(body)["id"] for _, body in receiver.posts]
    assert ids == ["rayservice/prod/svc/run-1/2"] * 3  # the same id each time: a receiver can deduplicate


async def test_a_400_is_not_retried(time_skipping_env: WorkflowEnvironment) -> None:
    env = time_skipping_env
    async with receiving(Receiver(400)) as receiver, notifying_worker(env, receiver.url) as queue:
        handle = await env.client.start_workflow(
            SendOneNotification.run, request(), id="notify-rejected", task_queue=queue
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        history = json.dumps((await handle.fetch_history()).to_json_dict())
    assert len(receiver.posts) == 1
    cause = failed.value.cause
    assert isinstance(cause, ActivityError)
    assert isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == NOTIFY_WEBHOOK_REJECTED
    assert receiver.url not in history
    assert "127.0.0.1" not in history
