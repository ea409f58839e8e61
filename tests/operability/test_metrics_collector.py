"""The state gauges count open RayJob and RayService workflows by their RayPhase search attribute (Temporal's
visibility store on the dev server)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.common import SearchAttributePair, TypedSearchAttributes
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import WorkflowEnvironment

from raypilot.metrics import PhaseCount, collect_once, phase_counts
from wire.metrics import RAYJOBS, RAYSERVICES
from workflows.search_attributes import RAY_KIND, RAY_NAME, RAY_NAMESPACE, RAY_PHASE

pytestmark = [pytest.mark.devserver, pytest.mark.timeout(120)]


def test_every_phase_of_both_kinds_is_counted() -> None:
    counts = phase_counts()
    assert PhaseCount(RAYJOBS, "deployment_status", "RayJob", "Running") in counts
    assert PhaseCount(RAYSERVICES, "phase", "RayService", "Upgrading") in counts
    assert "New" not in {count.phase for count in counts}  # an empty phase is never published
    assert counts[0].query() == 'RayKind="RayJob" AND RayPhase="Initializing" AND ExecutionStatus="Running"'


async def test_open_workflows_are_counted_by_phase(dev_server_env: WorkflowEnvironment) -> None:
    client = dev_server_env.client
    # A namespace of their own keeps other tests' workflows out of the count; no worker runs these.
    namespace = f"gauges-{uuid.uuid4().hex[:8]}"
    handles = []
    for index, phase in enumerate(("Running", "Running", "Retrying")):
        attributes = TypedSearchAttributes(
            [
                SearchAttributePair(RAY_KIND, "RayJob"),
                SearchAttributePair(RAY_NAMESPACE, namespace),
                SearchAttributePair(RAY_NAME, f"j{index}"),
                SearchAttributePair(RAY_PHASE, phase),
            ]
        )
        handles.append(
            await client.start_workflow(
                "RayJobWorkflow",
                {},
                id=f"rayjob/{namespace}/j{index}",
                task_queue=f"nobody-{namespace}",
                search_attributes=attributes,
            )
        )
    buffer = MetricBuffer(1000)
    meter = Runtime(telemetry=TelemetryConfig(metrics=buffer)).metric_meter
    scope = f'RayNamespace="{namespace}"'
    counts = [
        PhaseCount(RAYJOBS, "deployment_status", "RayJob", phase, scope)
        for phase in ("Running", "Retrying", "Suspended")
    ]
    try:
        for _ in range(100):  # visibility is eventually consistent
            found = await client.count_workflows(f'RayNamespace="{namespace}" AND ExecutionStatus="Running"')
            if found.count == 3:
                break
            await asyncio.sleep(0.1)
        await collect_once(client, meter, counts)
    finally:
        for handle in handles:
            await handle.terminate()
    values = {
        update.attributes["deployment_status"]: update.value
        for update in buffer.retrieve_updates()
        if update.metric.name == RAYJOBS
    }
    assert values == {"Running": 2, "Retrying": 1, "Suspended": 0}
