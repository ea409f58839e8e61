"""Tracing: off without the OTEL_* variables; with them, one trace runs from `raypilot apply` through the
workflow to the RayCluster's creation, recorded here by OpenTelemetry's in-memory exporter."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from activities.errors import http_error
from activities.tracing import ActivityCallSpans
from raypilot.cli.common import Console
from raypilot.cli.main import run_main
from raypilot.converter import raypilot_data_converter
from raypilot.settings import SettingsError, TemporalSettings
from raypilot.testing import FakeWorld, rayjob_manifest, running_worker
from raypilot.tracing import (
    client_interceptors,
    tracer_provider,
    traces_exporter,
    use_tracer_provider,
    worker_interceptors,
)

OTEL_ON = {"OTEL_TRACES_EXPORTER": "console"}


@pytest.mark.parametrize(
    ("env", "exporter"),
    [
        ({}, None),
        ({"OTEL_TRACES_EXPORTER": "none"}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "otlp"),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, "otlp"),
        ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, None),
    ],
)
def test_tracing_is_off_unless_the_standard_variables_turn_it_on(
    env: dict[str, str], exporter: str | None
) -> None:
    assert traces_exporter(env) == exporter


def test_an_unknown_exporter_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match="OTEL_TRACES_EXPORTER"):
        TemporalSettings.from_env({"OTEL_TRACES_EXPORTER": "zipkin"})


def test_without_the_variables_no_interceptor_is_added() -> None:
    use_tracer_provider(None)
    assert client_interceptors({}) == []
    assert worker_interceptors({}) == []


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        use_tracer_provider(None)


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        span = by_id[parent.span_id]
        names.append(span.name)
        parent = span.parent
    return names


async def test_one_trace_from_raypilot_apply_to_the_raycluster_creation(
    time_skipping_env: WorkflowEnvironment, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    env = time_skipping_env
    target = env.client.service_client.config.target_host
    traced = await Client.connect(
        target,
        namespace=env.client.namespace,
        data_converter=raypilot_data_converter,
        interceptors=client_interceptors(OTEL_ON),
    )
    manifest = tmp_path / "rayjob.json"
    manifest.write_text(json.dumps(rayjob_manifest(shutdownAfterJobFinishes=True)))
    world = FakeWorld()
    async with running_worker(
        traced, activities=world.activities(), interceptors=worker_interceptors(OTEL_ON)
    ) as task_queue:
        stdout, stderr = io.StringIO(), io.StringIO()
        cli_env = {
            "TEMPORAL_ADDRESS": target,
            "TEMPORAL_NAMESPACE": env.client.namespace,
            "RAYPILOT_TASK_QUEUE": task_queue,
            "HOME": str(tmp_path),
            **OTEL_ON,
        }
        console = Console(stdout=stdout, stderr=stderr, env=cli_env)
        code = await asyncio.to_thread(run_main, ["apply", "-f", str(manifest)], console)
        assert code == 0, stderr.getvalue()
        assert "rayjob/default/sample" in stdout.getvalue()
        await env.client.get_workflow_handle("rayjob/default/sample").result()

    finished = spans.get_finished_spans()
    by_id = {span.context.span_id: span for span in finished}
    [apply] = [
        span for span in finished if span.name.startswith("StartUpdateWithStartWorkflow:RayJobWorkflow")
    ]
    [create] = [span for span in finished if span.name == "k8s k8s.create_raycluster"]
    assert create.context.trace_id == apply.context.trace_id
    chain = _ancestors(create, by_id)
    assert apply.parent is None  # the CLI's call is the root of the whole trace
    # The workflow decided the act: its StartActivity span sits between the CLI's call and the activity.
    assert chain == [
        "RunActivity:k8s.create_raycluster",
        "StartActivity:k8s.create_raycluster",
        "StartUpdateWithStartWorkflow:RayJobWorkflow",
    ]
    assert create.attributes is not None
    assert create.attributes["raypilot.io"] == "k8s"


class _Failing(ActivityInboundInterceptor):
    def __init__(self, error: Exception) -> None:
        self.error = error

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        raise self.error


async def test_a_failed_call_span_carries_its_error_type_and_status_but_not_its_message(
    spans: InMemorySpanExporter,
) -> None:
    provider = tracer_provider({})
    assert provider is not None
    failing = _Failing(http_error("kubernetes", 403, "create RayCluster", "Bearer abc.def"))
    interceptor = ActivityCallSpans(provider.get_tracer("test")).intercept_activity(failing)
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, activity_type="k8s.create_raycluster")

    async def call() -> None:
        await interceptor.execute_activity(ExecuteActivityInput(fn=call, args=[], executor=None, headers={}))

    with pytest.raises(ApplicationError):
        await env.run(call)
    [span] = spans.get_finished_spans()
    assert span.name == "k8s k8s.create_raycluster"
    assert span.attributes is not None
    assert span.attributes["error.type"] == "KubernetesForbidden"
    assert span.attributes["http.response.status_code"] == 403
    assert span.status.status_code == StatusCode.ERROR
    assert "abc.def" not in str(span.to_json())
