"""The fake RayService world plus the measurements of the analysis gates: per cluster, the HTTP probe's
samples and the Prometheus answer (what the real activities would have measured)."""

from __future__ import annotations

from typing import Any

from temporalio import activity

from raypilot.testing.rayservice_world import FakeRayWorld
from wire import names
from wire.analysis import HttpProbeRequest, HttpProbeSamples, ProbeSample, PrometheusAnswer, PrometheusRequest

HEALTHY = [ProbeSample(200, 12.0)] * 20
FAILING = [ProbeSample(200, 12.0)] * 15 + [ProbeSample(503, 3.0)] * 5


class GatedWorld(FakeRayWorld):
    def __init__(self) -> None:
        super().__init__()
        self.samples: list[ProbeSample] = HEALTHY  # what a probe measures
        self.sample_queue: list[list[ProbeSample]] = []  # what the next probes measure, first (in order)
        self.prometheus: PrometheusAnswer = PrometheusAnswer(value=0.0, series=1)
        self.probes: list[HttpProbeRequest] = []
        self.queries: list[PrometheusRequest] = []

    def activities(self) -> list[Any]:
        world = self

        @activity.defn(name=names.PROBE_HTTP)
        async def probe_http(request: HttpProbeRequest) -> HttpProbeSamples:
            world.probes.append(request)
            samples = world.sample_queue.pop(0) if world.sample_queue else world.samples
            return HttpProbeSamples(list(samples))

        @activity.defn(name=names.QUERY_PROMETHEUS)
        async def query_prometheus(request: PrometheusRequest) -> PrometheusAnswer:
            world.queries.append(request)
            return world.prometheus

        return [*super().activities(), probe_http, query_prometheus]
