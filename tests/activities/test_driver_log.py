"""`dashboard.save_driver_log` (activities/driver_log.py) and the log store (activities/log_store.py): the
driver log read through the API server's service proxy (an httpx.MockTransport playing the API server and the
dashboard behind it), kept whole in a directory or in a real S3-compatible server (moto), its last lines
posted as the RayJob's Event; only a bounded tail comes back to the workflow, and no credential leaves."""

from __future__ import annotations

import json
import logging
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from kubernetes import client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.dependencies import ActivityDependencies
from activities.driver_log import LOG_STORE_UNAVAILABLE, DriverLogActivities
from activities.log_store import (
    S3Credentials,
    S3LogStore,
    log_store_from_env,
    sigv4_headers,
)
from tests.activities.s3_server import S3_PYTHON, s3_server
from wire.dashboard import DashboardTarget
from wire.driver_log import STATUS_TAIL, SaveDriverLog, log_tail
from wire.kubernetes import InvolvedObject, RecordEvent

LOG = "".join(f"{number:04d} training step {number}\n" for number in range(1, 1001)) + "Traceback: boom\n"
PROXY = "/api/v1/namespaces/ns/services/rc-head-svc:dashboard/proxy"
TARGET = DashboardTarget(namespace="ns", head_service="rc-head-svc")
SECRET_KEY = "s3cr3t-Key-never-shown"


class FakeApiServer:
    """The API server: its service proxy to the dashboard (a job's log, 404 for an unknown job, 502 for a
    head that does not answer) and the Events it is given (409 for a name it has)."""

    def __init__(self) -> None:
        self.events: dict[str, dict[str, object]] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == f"{PROXY}/api/jobs/job-1/logs":
            return httpx.Response(200, json={"logs": LOG})
        if path == f"{PROXY}/api/jobs/missing/logs":
            return httpx.Response(404, text="Job missing does not exist")
        if path == f"{PROXY}/api/jobs/broken/logs":
            return httpx.Response(502, text="error trying to reach service")
        if path == "/api/v1/namespaces/ns/events" and request.method == "POST":
            body = json.loads(request.content)
            name = body["metadata"]["name"]
            if name in self.events:
                return httpx.Response(409, json={"kind": "Status", "reason": "AlreadyExists"})
            self.events[name] = body
            return httpx.Response(201, json=body)
        return httpx.Response(404, text=f"unexpected {request.method} {path}")


def dependencies(api: FakeApiServer, env: dict[str, str]) -> ActivityDependencies:
    configuration = client.Configuration()
    configuration.host = "http://apiserver.test:6443"
    return ActivityDependencies(
        env={"RAYPILOT_DASHBOARD_ACCESS": "proxy", **env},
        kube_configuration=configuration,
        apiserver_transport=httpx.MockTransport(api),
    )


def request(submission_id: str = "job-1") -> SaveDriverLog:
    involved = InvolvedObject(kind="RayJob", name="train", namespace="ns", uid="uid-1")
    event = RecordEvent(involved, "run1-7", "DriverLogSaved", f"Driver log of Ray job {submission_id}")
    return SaveDriverLog(TARGET, submission_id, "ns", "train", event)


async def save(api: FakeApiServer, env: dict[str, str], submission_id: str = "job-1") -> object:
    activities = DriverLogActivities(dependencies(api, env))
    return await ActivityEnvironment().run(activities.save_driver_log, request(submission_id))


async def test_the_full_log_goes_to_the_directory_and_only_its_tail_comes_back(tmp_path: Path) -> None:
    api = FakeApiServer()
    saved = await save(api, {"RAYPILOT_LOG_STORE": str(tmp_path)})

    kept = tmp_path / "ns" / "train" / "job-1.log"
    assert kept.read_text() == LOG
    assert saved.found  # type: ignore[attr-defined]
    assert saved.stored == kept.as_uri()  # type: ignore[attr-defined]
    assert saved.total_bytes == len(LOG)  # type: ignore[attr-defined]
    assert saved.tail == log_tail(LOG, STATUS_TAIL)  # type: ignore[attr-defined]
    assert saved.tail.endswith("1000 training step 1000\nTraceback: boom")  # type: ignore[attr-defined]
    # What the workflow's history gets is bounded: the log's beginning is not in it.
    assert "0001 training step 1" not in repr(saved)
    assert len(repr(saved).encode()) < STATUS_TAIL.max_bytes + 2048
    [event] = api.events.values()
    assert event["metadata"] == {"name": "train.run1-7", "namespace": "ns"}  # type: ignore[comparison-overlap]
    assert (event["reason"], event["type"]) == ("DriverLogSaved", "Normal")
    message = str(event["message"])
    assert len(message.encode()) <= 1024
    assert message.startswith("Driver log of Ray job job-1, full log (")
    assert kept.as_uri() in message
    assert message.endswith("1000 training step 1000\nTraceback: boom")
    assert saved.event_message == message  # type: ignore[attr-defined]


async def test_a_retried_save_writes_the_same_object_and_finds_its_event(tmp_path: Path) -> None:
    api = FakeApiServer()
    env = {"RAYPILOT_LOG_STORE": f"file://{tmp_path}"}
    first = await save(api, env)
    again = await save(api, env)
    assert first == again
    assert (tmp_path / "ns" / "train" / "job-1.log").read_text() == LOG
    assert len(api.events) == 1
    assert [path.name for path in (tmp_path / "ns" / "train").iterdir()] == ["job-1.log"]


async def test_without_a_store_the_tail_is_saved_and_the_event_says_the_log_is_not_kept() -> None:
    api = FakeApiServer()
    saved = await save(api, {})
    assert (saved.found, saved.stored, saved.store_error) == (True, "", "")  # type: ignore[attr-defined]
    assert saved.tail == log_tail(LOG, STATUS_TAIL)  # type: ignore[attr-defined]
    [event] = api.events.values()
    assert "not kept: no log store" in str(event["message"])


async def test_a_job_the_dashboard_does_not_know_saves_nothing_and_says_so(tmp_path: Path) -> None:
    api = FakeApiServer()
    saved = await save(api, {"RAYPILOT_LOG_STORE": str(tmp_path)}, "missing")
    assert (saved.found, saved.tail, saved.stored) == (False, "", "")  # type: ignore[attr-defined]
    assert not (tmp_path / "ns").exists()
    [event] = api.events.values()
    assert event["message"] == "Ray job missing has no driver log on the dashboard: nothing saved"


async def test_a_dashboard_that_does_not_answer_fails_the_attempt_for_a_retry() -> None:
    with pytest.raises(ApplicationError) as raised:
        await save(FakeApiServer(), {}, "broken")
    assert raised.value.type == "DashboardServerError"
    assert not raised.value.non_retryable


async def test_a_store_that_refuses_for_good_keeps_the_tail_and_says_why(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    api = FakeApiServer()
    saved = await save(api, {"RAYPILOT_LOG_STORE": str(not_a_directory)})
    assert saved.found  # type: ignore[attr-defined]
    assert saved.stored == ""  # type: ignore[attr-defined]
    assert "cannot write" in saved.store_error  # type: ignore[attr-defined]
    assert saved.tail == log_tail(LOG, STATUS_TAIL)  # type: ignore[attr-defined]
    [event] = api.events.values()
    assert "not kept: log store: cannot write" in str(event["message"])


async def test_a_store_that_may_recover_fails_the_attempt_without_showing_the_secret() -> None:
    def unavailable(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, text=f"SlowDown {request.headers['authorization']}")

    api = FakeApiServer()
    activities = DriverLogActivities(dependencies(api, {}))
    activities.store = S3LogStore(
        "http://s3.test", "logs", "", "us-east-1", S3Credentials("AKID", SECRET_KEY),
        httpx.AsyncClient(transport=httpx.MockTransport(unavailable)),
    )  # fmt: skip
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(activities.save_driver_log, request())
    assert raised.value.type == LOG_STORE_UNAVAILABLE
    assert not raised.value.non_retryable
    assert "HTTP 503" in raised.value.message
    assert "Signature=***" in raised.value.message or SECRET_KEY not in raised.value.message
    assert api.events == {}  # the Event comes with the saved log, on the attempt that saves it


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"RAYPILOT_LOG_STORE": "logs/here"}, "RAYPILOT_LOG_STORE must be an absolute directory"),
        ({"RAYPILOT_LOG_STORE": "s3://"}, "RAYPILOT_LOG_STORE: no bucket"),
        ({"RAYPILOT_LOG_STORE": "s3://logs"}, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        (
            {
                "RAYPILOT_LOG_STORE": "s3://logs",
                "AWS_ACCESS_KEY_ID": "a",
                "AWS_SECRET_ACCESS_KEY": "b",
                "RAYPILOT_LOG_STORE_S3_ENDPOINT": "minio:9000",
            },
            "RAYPILOT_LOG_STORE_S3_ENDPOINT must be an http(s) URL",
        ),
    ],
)
def test_an_unusable_setting_is_named(env: dict[str, str], complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)):
        log_store_from_env(env, httpx.AsyncClient())


async def test_the_s3_store_keeps_the_log_in_a_real_s3_compatible_server(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with s3_server() as endpoint:
        env = {
            "RAYPILOT_LOG_STORE": "s3://driver-logs/raypilot",
            "RAYPILOT_LOG_STORE_S3_ENDPOINT": endpoint,
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "eu-west-1",
        }
        http = httpx.AsyncClient()
        store = log_store_from_env(env, http)
        assert isinstance(store, S3LogStore)
        bucket = httpx.URL(f"{endpoint}/driver-logs")
        creation = (
            b"<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>"
            b"</CreateBucketConfiguration>"
        )
        headers = sigv4_headers(
            "PUT", bucket, creation, region="eu-west-1", credentials=store.credentials, now=datetime.now(UTC)
        )
        assert (await http.put(bucket, content=creation, headers=headers)).is_success

        api = FakeApiServer()
        saved = await save(api, env)
        again = await save(api, env)

        assert saved == again
        assert saved.stored == "s3://driver-logs/raypilot/ns/train/job-1.log"  # type: ignore[attr-defined]
        assert await store.get("ns/train/job-1.log") == LOG.encode()
        assert await store.get("ns/train/never-saved.log") is None
        # A key with characters S3 encodes in its path is signed as sent.
        assert await store.put("ns/train/a b+c.log", b"x") == "s3://driver-logs/raypilot/ns/train/a b+c.log"
        assert await store.get("ns/train/a b+c.log") == b"x"
        everything = repr(saved) + json.dumps(api.events) + caplog.text + repr(store)
        assert SECRET_KEY not in everything
        await http.aclose()


def test_requests_are_signed_as_botocore_signs_them() -> None:
    """Signature Version 4 against AWS's own implementation (botocore, in the S3 server's venv)."""
    if not S3_PYTHON.exists():
        pytest.skip("no botocore: run `make s3-server` (.venv-s3)")
    credentials = S3Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")
    url = httpx.URL("https://s3.eu-west-1.amazonaws.com/driver-logs/ns/train/job%201.log")
    payload = b"some driver log\n"
    now = datetime(2026, 12, 7, 12, 30, 5, tzinfo=UTC)
    ours = sigv4_headers("PUT", url, payload, region="eu-west-1", credentials=credentials, now=now)
    script = """
import datetime, hashlib, json, sys
from unittest import mock
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
url, payload = sys.argv[1], sys.argv[2].encode()
request = AWSRequest(method="PUT", url=url, data=payload)
request.headers["x-amz-content-sha256"] = hashlib.sha256(payload).hexdigest()
moment = datetime.datetime(2026, 12, 7, 12, 30, 5)
with mock.patch("botocore.auth.get_current_datetime", return_value=moment):
    S3SigV4Auth(Credentials(sys.argv[3], sys.argv[4], sys.argv[5]), "s3", "eu-west-1").add_auth(request)
print(json.dumps({name.lower(): value for name, value in request.headers.items()}))
"""
    answer = subprocess.run(
        [str(S3_PYTHON), "-c", script, str(url), payload.decode(), credentials.access_key_id,
         credentials.secret_access_key, credentials.session_token],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    theirs = json.loads(answer.stdout)
    assert ours["x-amz-date"] == theirs["x-amz-date"] == "20261207T123005Z"
    assert ours["authorization"] == theirs["authorization"]
