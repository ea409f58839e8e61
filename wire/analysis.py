"""Inputs and results of the analysis-gate activities of `raypilot.io/rollout` (issue #18).

The activities only measure (observe); the verdict is a pure decision of the workflow
(`workflows/decisions/rayservice/upgrade/gates.py`), so a threshold change never needs a new activity.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["HttpProbeRequest", "HttpProbeSamples", "ProbeSample", "PrometheusAnswer", "PrometheusRequest"]


@dataclass(frozen=True)
class HttpProbeRequest:
    """`samples` GETs of `path` (may carry a query) on a RayCluster's own head Service at its Serve port, one
    every `interval_seconds`, each allowed `timeout_seconds`: directly at the Service's cluster DNS name, or
    through the API server's service proxy when the worker runs outside the cluster."""

    namespace: str
    service: str
    port: int
    path: str = "/"
    samples: int = 20
    interval_seconds: float = 1.0
    timeout_seconds: float = 2.0


@dataclass(frozen=True)
class ProbeSample:
    status: int  # the HTTP status; 0 when no answer came back (refused, reset, timed out)
    latency_ms: float  # until the whole answer was read (the timeout for no answer)


@dataclass(frozen=True)
class HttpProbeSamples:
    samples: list[ProbeSample] = field(default_factory=list)


@dataclass(frozen=True)
class PrometheusRequest:
    """A PromQL instant query (`GET <address>/api/v1/query?query=...`)."""

    address: str  # e.g. "http://prometheus.monitoring:9090"
    query: str
    timeout_seconds: float = 10.0


@dataclass(frozen=True)
class PrometheusAnswer:
    """The query's value (the first sample of a vector, or a scalar), or why there is none: `error` says
    why Prometheus could not be asked or refused the query ("" when it answered); `series` counts the
    samples of a vector (0: the query matched nothing, `value` None)."""

    value: float | None = None
    series: int = 0
    error: str = ""
