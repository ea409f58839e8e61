"""The measurements behind the analysis gates of `raypilot.io/rollout` (issue #18): an HTTP probe of a
RayCluster's Serve endpoint through its own head Service, and a Prometheus instant query.

Both only measure and are read-only, so safe to retry; neither decides: the workflow judges the samples or
the value against the gate's thresholds (`workflows/decisions/rayservice/upgrade/gates.py`). A probe that
gets no answer is a sample like any other (status 0), not an error; Prometheus that cannot be asked, or
refuses the query, is an answer with `error` set, which the gate's `onError` setting turns into a failure or
an inconclusive run.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any, Final
from urllib.parse import quote

import httpx
from temporalio import activity

from activities.dependencies import ActivityDependencies
from wire import stubs
from wire.analysis import HttpProbeRequest, HttpProbeSamples, ProbeSample, PrometheusAnswer, PrometheusRequest
from wire.stubs.common import implements

__all__ = ["AnalysisActivities", "prometheus_answer"]

MAX_ERROR_CHARS: Final = 300


def prometheus_answer(body: Any) -> PrometheusAnswer:
    """The value of an instant query's JSON answer: a scalar, or the first sample of a vector (with how many
    samples it had). Anything else (a matrix, a string, a malformed answer) is an answer with `error`."""
    if not isinstance(body, dict):
        return PrometheusAnswer(error="not a Prometheus API answer")
    if body.get("status") != "success":
        refused = f"{body.get('errorType', 'error')}: {body.get('error', '')}"
        return PrometheusAnswer(error=refused[:MAX_ERROR_CHARS])
    data = body.get("data") or {}
    kind = data.get("resultType")
    result: Any = data.get("result")
    try:
        if kind == "scalar":
            return PrometheusAnswer(value=float(result[1]), series=1)
        if kind == "vector" and isinstance(result, list):
            if not result:
                return PrometheusAnswer(series=0)
            return PrometheusAnswer(value=float(result[0]["value"][1]), series=len(result))
    except (IndexError, KeyError, TypeError, ValueError):
        return PrometheusAnswer(error=f"malformed {kind} answer")
    return PrometheusAnswer(error=f"the query gives a {kind}, not a scalar or an instant vector")


class AnalysisActivities:
    def __init__(self, dependencies: ActivityDependencies) -> None:
        self.dependencies = dependencies

    async def _probe_once(self, request: HttpProbeRequest) -> ProbeSample:
        started = time.monotonic()
        path = request.path if request.path.startswith("/") else "/" + request.path
        try:
            if self.dependencies.dashboard_access == "proxy":
                response = await self.dependencies.apiserver().request(
                    "GET",
                    f"/api/v1/namespaces/{request.namespace}/services/{request.service}:{request.port}/proxy{path}",
                    request_timeout=request.timeout_seconds,
                )
            else:
                host = f"{request.service}.{request.namespace}.svc.{self.dependencies.cluster_domain}"
                response = await self.dependencies.http.get(
                    f"http://{host}:{request.port}{path}", timeout=request.timeout_seconds
                )
            status = response.status_code
        except httpx.HTTPError:
            status = 0
        elapsed_ms = (time.monotonic() - started) * 1000
        return ProbeSample(status, round(elapsed_ms, 3))

    @implements(stubs.probe_http)
    async def probe_http(self, request: HttpProbeRequest) -> HttpProbeSamples:
        """`samples` requests, one every `interval_seconds` (a slow answer delays the next one), with a
        heartbeat per sample: a retried attempt starts the window again."""
        samples: list[ProbeSample] = []
        next_at = time.monotonic()
        for _ in range(request.samples):
            samples.append(await self._probe_once(request))
            activity.heartbeat(len(samples))
            next_at += request.interval_seconds
            if len(samples) < request.samples:
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        return HttpProbeSamples(samples)

    @implements(stubs.query_prometheus)
    async def query_prometheus(self, request: PrometheusRequest) -> PrometheusAnswer:
        url = f"{request.address.rstrip('/')}/api/v1/query?query={quote(request.query, safe='')}"
        try:
            response = await self.dependencies.http.get(url, timeout=request.timeout_seconds)
        except httpx.HTTPError as error:
            unreachable = f"Prometheus unreachable: {type(error).__name__}: {error}"
            return PrometheusAnswer(error=unreachable[:MAX_ERROR_CHARS])
        try:
            body = response.json()
        except ValueError:
            return PrometheusAnswer(error=f"HTTP {response.status_code}: {response.text[:200]}")
        answer = prometheus_answer(body)
        if answer.value is not None and not math.isfinite(answer.value):  # NaN: e.g. 0/0 without traffic
            return PrometheusAnswer(error=f"the query's value is {answer.value}", series=answer.series)
        return answer
