"""The worker's state gauges: how many RayJobs are in each jobDeploymentStatus and RayServices in each phase.

A workflow knows only its own state, and its gauges would vanish with a worker restart (replay records no
metrics), so these come from Temporal's visibility store instead: one count query per phase (the `RayPhase`
search attribute of open workflows) every `COLLECT_INTERVAL`. Several workers report the same numbers;
dashboards take `max` over workers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from temporalio.client import Client
from temporalio.common import MetricMeter
from temporalio.service import RPCError

from models.rayjob import JobDeploymentStatus
from wire.metrics import RAYJOBS, RAYSERVICES, SPECS

log = logging.getLogger(__name__)

COLLECT_INTERVAL: Final = timedelta(seconds=30)
RAYSERVICE_PHASES: Final = ("Initializing", "Running", "Upgrading", "RollingBack", "Suspended", "Failed")
RAYJOB_PHASES: Final = tuple(status.value for status in JobDeploymentStatus if status.value)


@dataclass(frozen=True)
class PhaseCount:
    """One gauge value: `metric` with `label`=`phase` counts the open workflows of `kind` in that phase."""

    metric: str
    label: str
    kind: str
    phase: str
    scope: str = ""  # a further condition of the visibility query (e.g. one RayNamespace)

    def query(self) -> str:
        query = f'RayKind="{self.kind}" AND RayPhase="{self.phase}" AND ExecutionStatus="Running"'
        return f"{query} AND {self.scope}" if self.scope else query


def phase_counts() -> tuple[PhaseCount, ...]:
    jobs = (PhaseCount(RAYJOBS, "deployment_status", "RayJob", phase) for phase in RAYJOB_PHASES)
    services = (PhaseCount(RAYSERVICES, "phase", "RayService", phase) for phase in RAYSERVICE_PHASES)
    return (*jobs, *services)


async def collect_once(client: Client, meter: MetricMeter, counts: Sequence[PhaseCount]) -> None:
    for count in counts:
        found = await client.count_workflows(count.query())
        spec = SPECS[count.metric]
        meter.create_gauge(spec.name, spec.description).set(found.count, {count.label: count.phase})


async def collect_phase_gauges(
    client: Client, meter: MetricMeter, interval: timedelta = COLLECT_INTERVAL
) -> None:
    """Sets the gauges every `interval` until cancelled; a failed round is logged and tried again."""
    counts = phase_counts()
    while True:
        try:
            await collect_once(client, meter, counts)
        except RPCError as error:
            log.warning("counting RayJobs and RayServices by phase failed: %s", error)
        await asyncio.sleep(interval.total_seconds())
