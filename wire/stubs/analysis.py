"""The stubs of the analysis gates' measurements (an HTTP probe, a Prometheus query)."""

from __future__ import annotations

from temporalio import activity

from wire import names
from wire.analysis import HttpProbeRequest, HttpProbeSamples, PrometheusAnswer, PrometheusRequest
from wire.stubs.common import STUB_MESSAGE as _STUB


@activity.defn(name=names.PROBE_HTTP)
async def probe_http(request: HttpProbeRequest) -> HttpProbeSamples:
    """`activities.analysis.AnalysisActivities.probe_http`"""
    raise NotImplementedError(_STUB)


@activity.defn(name=names.QUERY_PROMETHEUS)
async def query_prometheus(request: PrometheusRequest) -> PrometheusAnswer:
    """`activities.analysis.AnalysisActivities.query_prometheus`"""
    raise NotImplementedError(_STUB)
