"""Worker logs: JSON lines with the workflow and its RayJob/RayService on every line logged for a workflow
or an activity, and no secret in any line."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from raypilot.logs import (
    ContextFilter,
    JsonFormatter,
    context_as_fields,
    handed_off,
    log_handler,
    mask_secrets,
    ray_object,
)
from raypilot.testing import FakeWorld, rayjob_manifest, running_worker, start

API_KEY = "tk-cloud-5f1e2d3c4b5a"


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        ("GET /api/jobs Authorization: Bearer eyJhbGciOi.secret.sig", "Authorization: Bearer ***"),
        ("proxy says basic dXNlcjpwYXNz", "basic ***"),
        ('{"token": "s3cr3t-value", "name": "x"}', '{"token": "***", "name": "x"}'),
        ("{'redisPassword': 'hunter2hunter2'}", "{'redisPassword': '***'}"),
        ("connecting with api_key=abcd1234 to cloud", "api_key=*** to cloud"),
        ("RAY_AUTH_TOKEN: abcdefgh", "RAY_AUTH_TOKEN: ***"),
        (f"key {API_KEY} in a sentence", "key *** in a sentence"),
        ("tokens of the RayJob: none here", "tokens of the RayJob: none here"),
    ],
)
def test_secrets_are_masked(line: str, kept: str) -> None:
    masked = mask_secrets(line, [API_KEY])
    assert kept in masked
    for secret in ("eyJhbGciOi", "dXNlcjpwYXNz", "s3cr3t", "hunter2", "abcd1234", "abcdefgh", API_KEY):
        assert secret not in masked


@pytest.mark.parametrize(
    ("workflow_id", "expected"),
    [
        ("rayjob/default/sample", {"ray_kind": "rayjob", "ray_namespace": "default", "ray_name": "sample"}),
        ("rayservice/team-a/svc", {"ray_kind": "rayservice", "ray_namespace": "team-a", "ray_name": "svc"}),
        ("something-else", {}),
        ("rayjob/only-namespace", {}),
    ],
)
def test_the_ray_object_comes_from_the_workflow_id(workflow_id: str, expected: dict[str, str]) -> None:
    assert ray_object(workflow_id) == expected


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The root logger's records as the worker writes them with RAYPILOT_LOG_FORMAT=json."""
    stream = io.StringIO()
    handler = log_handler("json", {"TEMPORAL_API_KEY": API_KEY})
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(stream)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    context_as_fields()
    try:
        yield stream
    finally:
        context_as_fields(False)
        root.removeHandler(handler)
        root.setLevel(level)


def _parsed(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


async def test_every_workflow_line_names_the_workflow_and_its_rayjob(
    time_skipping_env: WorkflowEnvironment, json_lines: io.StringIO
) -> None:
    world = FakeWorld()
    async with running_worker(time_skipping_env.client, activities=world.activities()) as task_queue:
        handle = await start(
            time_skipping_env.client, rayjob_manifest(shutdownAfterJobFinishes=True), task_queue
        )
        await handle.result()
    lines = [line for line in _parsed(json_lines) if line["logger"] == "temporalio.workflow"]
    assert any("Initializing -> Running" in line["message"] for line in lines), lines
    for line in lines:
        assert line["workflow_id"] == "rayjob/default/sample"
        assert (line["ray_kind"], line["ray_namespace"], line["ray_name"]) == ("rayjob", "default", "sample")
        assert line["workflow_type"] == "RayJobWorkflow"
        assert "{" not in line["message"]  # the context is in fields, not appended to the message


def test_a_line_logged_inside_an_activity_names_its_workflow_and_hides_secrets(
    json_lines: io.StringIO,
) -> None:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, workflow_id="rayservice/team-a/svc", activity_type="k8s.get_service"
    )

    def act() -> None:
        logging.getLogger("activities.kubernetes").warning("retrying with Authorization: Bearer abc.def.ghi")
        try:
            raise RuntimeError(f"token={API_KEY}")
        except RuntimeError:
            logging.getLogger("activities.kubernetes").exception("failed")

    env.run(act)
    text = json_lines.getvalue()
    assert "abc.def.ghi" not in text
    assert API_KEY not in text
    warning, failure = _parsed(json_lines)
    assert warning["ray_name"] == "svc"
    assert warning["ray_namespace"] == "team-a"
    assert warning["activity_type"] == "k8s.get_service"
    assert warning["level"] == "WARNING"
    assert "RuntimeError: token=***" in failure["message"]


def test_a_line_outside_any_workflow_has_no_context() -> None:
    record = logging.LogRecord("raypilot.worker", logging.INFO, __file__, 1, "worker started", None, None)
    ContextFilter().filter(record)
    assert json.loads(JsonFormatter().format(record)) == {
        "time": json.loads(JsonFormatter().format(record))["time"],
        "level": "INFO",
        "logger": "raypilot.worker",
        "message": "worker started",
    }


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="RAYPILOT_LOG_FORMAT"):
        log_handler("xml", {})


def test_a_log_call_never_waits_for_the_writer() -> None:
    """The worker's handler hands records to a writer thread and takes no lock: a lock left held (the SDK's
    deadlock interruption once struck a workflow thread inside a stream handler's lock, and the worker froze)
    can stall the writer, never a log call."""
    written = io.StringIO()
    writer = log_handler("json", {"TEMPORAL_API_KEY": API_KEY})
    writer.setStream(written)
    front = handed_off(writer)
    assert front.lock is None
    assert writer.filters == []  # context and masking run in the logging thread, before the hand-off
    logger = logging.getLogger("raypilot.test.handoff")
    logger.propagate = False
    logger.addHandler(front)
    held = threading.Lock()  # a plain lock, so that the test can release it from another thread
    writer.lock = held  # type: ignore[assignment]
    stuck = threading.Thread(target=held.acquire)  # held by a thread that is gone
    stuck.start()
    stuck.join()
    try:
        logged = threading.Thread(target=logger.warning, args=("key %s in a line", API_KEY))
        logged.start()
        logged.join(timeout=5)
        assert not logged.is_alive()
    finally:
        held.release()
        logger.removeHandler(front)


def test_the_writer_thread_writes_what_it_is_handed() -> None:
    written = io.StringIO()
    writer = log_handler("json", {"TEMPORAL_API_KEY": API_KEY})
    writer.setStream(written)
    front = handed_off(writer)
    logger = logging.getLogger("raypilot.test.handoff-written")
    logger.propagate = False
    logger.addHandler(front)
    try:
        logger.warning("key %s in a line", API_KEY)
        for _ in range(500):
            if written.getvalue():
                break
            time.sleep(0.01)
        line = json.loads(written.getvalue())
        assert line["message"] == "key *** in a line"
        assert line["logger"] == "raypilot.test.handoff-written"
    finally:
        logger.removeHandler(front)
