"""The measured analysis gates of `raypilot.io/rollout` in a RayService pass (issue #18): an HTTP probe of a
cluster's Serve endpoint through its own head Service, and a Prometheus instant query.

A gate is asked at a point of the upgrade (`step N` of a plan, `prePromotion`, `postPromotion`); when it
has no verdict there yet for that cluster it runs now, in the pass (an activity for the whole probe
window), and its run is kept in the workflow state (`RayServiceState.gate_runs`, by point), so a later
pass, a replay or a new run after continue-as-new does not measure again. The verdicts are decided in
decisions/rayservice/upgrade/gates.py.
"""

from __future__ import annotations

from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.rayservice import RayService
    from models.rollout import Analysis, RolloutSettings
    from wire import stubs
    from wire.analysis import HttpProbeRequest, PrometheusRequest
    from workflows.decisions.rayservice.observed_clusters import head_service_of
    from workflows.decisions.rayservice.services import serve_port
    from workflows.decisions.rayservice.upgrade.analysis import AnalysisResult
    from workflows.decisions.rayservice.upgrade.gates import (
        GateRun,
        gate_results,
        gate_retry_at,
        http_probe_verdict,
        prometheus_verdict,
        should_run_gate,
    )
    from workflows.rayservice.part import RayServicePart

from workflows.kit.calls import IO, call

__all__ = ["AnalysisGates"]


class AnalysisGates(RayServicePart):
    def results(self, settings: RolloutSettings, cluster: str, point: str) -> dict[str, AnalysisResult]:
        """The measured gates' results at this point (pending until run)."""
        return gate_results(settings.analyses, self.state.gate_runs, cluster, point)

    def retry_at(self, cluster: str, point: str) -> datetime | None:
        return gate_retry_at(self.state.gate_runs.get(point), cluster, point)

    async def run_if_due(
        self, rayservice: RayService, settings: RolloutSettings, name: str, cluster: str, point: str
    ) -> GateRun | None:
        """Runs the measured gate `name` on `cluster` when it has no verdict at `point` yet; the run, or None
        when nothing ran (a serveStatus gate, a verdict already there, an inconclusive run not due)."""
        analysis = next((a for a in settings.analyses if a.name == name), None)
        if analysis is None:
            return None
        now = workflow.now()
        if not should_run_gate(analysis, self.state.gate_runs.get(point), cluster, point, now):
            return None
        run = await self._measure(rayservice, analysis, cluster, point)
        self.state.gate_runs[point] = run
        return run

    async def _measure(self, rayservice: RayService, analysis: Analysis, cluster: str, point: str) -> GateRun:
        namespace = rayservice.metadata.namespace
        if analysis.http is not None:
            probe = analysis.http
            request = HttpProbeRequest(
                namespace,
                head_service_of(cluster),
                serve_port(self.world.cluster(cluster, rayservice)),
                probe.path,
                probe.samples,
                float(probe.interval_seconds),
                float(probe.timeout_seconds),
            )
            summary = f"analysis {analysis.name} ({point}): HTTP probe of {cluster}"
            samples = await call(stubs.probe_http, request, IO.ANALYSIS, summary=summary)
            return http_probe_verdict(analysis.name, cluster, point, probe, samples.samples, workflow.now())
        query = analysis.prometheus
        if query is None:
            raise ValueError(f"analysis {analysis.name} is not measured")  # never: callers check
        summary = f"analysis {analysis.name} ({point}): Prometheus query for {cluster}"
        answer = await call(
            stubs.query_prometheus,
            PrometheusRequest(query.address, query.query, float(query.timeout_seconds)),
            IO.ANALYSIS,
            summary=summary,
        )
        return prometheus_verdict(analysis.name, cluster, point, query, answer, workflow.now())
