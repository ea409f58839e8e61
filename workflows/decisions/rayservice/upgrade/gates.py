"""The verdicts of the measured analysis gates of `raypilot.io/rollout` (issue #18): an HTTP probe of the new
cluster's Serve endpoint and a Prometheus instant query. raypilot's own (Argo Rollouts' AnalysisRuns for
Ray Serve).

A gate run belongs to one pending cluster and one point of the upgrade (`step N` of a plan, `prePromotion`,
`postPromotion`): another cluster, or another point, runs the gate anew. The activity measures
(wire/analysis.py); the verdict is decided here:

- http: a sample succeeds with an HTTP 2xx/3xx answer; the run passes when the success rate is at least
  `minSuccessRate` and, with `maxLatencyMs`, the `latencyPercentile` latency of all samples (nearest rank,
  a sample without an answer counting with its timeout) is at most that.
- prometheus: the value must satisfy `successCondition` ("< 0.01"). Prometheus unreachable, the query
  refused, no series or a NaN: `onError: Fail` fails the gate, `Inconclusive` leaves it without a verdict
  and it runs again `INCONCLUSIVE_RETRY_SECONDS` later (the progress deadlines still apply).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from models.rollout import Analysis, HttpProbe, OnGateError, PrometheusQuery
from wire.analysis import ProbeSample, PrometheusAnswer
from workflows.decisions.rayservice.upgrade.analysis import AnalysisResult

__all__ = [
    "INCONCLUSIVE_RETRY_SECONDS",
    "GateRun",
    "condition_holds",
    "gate_results",
    "gate_retry_at",
    "http_probe_verdict",
    "is_measured",
    "latency_percentile",
    "prometheus_verdict",
    "should_run_gate",
]

INCONCLUSIVE_RETRY_SECONDS: Final = 30
GateVerdict = Literal["pass", "fail", "inconclusive"]
_CONDITION = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$")
_OPERATORS: Final[Mapping[str, Callable[[float, float], bool]]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


@dataclass(frozen=True)
class GateRun:
    """One run of a measured gate, kept in the workflow state and shown in the RolloutAnalysis condition."""

    analysis: str
    cluster: str
    point: str  # "step 3", "prePromotion", "postPromotion"
    verdict: GateVerdict
    values: str  # what was measured, e.g. "samples=20, success=100.0 % (min 95.0 %), p95=12.0 ms"
    at: datetime
    samples: int = 0
    success_rate: float | None = None
    latency_ms: float | None = None
    value: float | None = None


def is_measured(analysis: Analysis) -> bool:
    """Whether the gate needs an activity to measure (http, prometheus), not only the last observation."""
    return analysis.http is not None or analysis.prometheus is not None


def latency_percentile(latencies: Sequence[float], percentile: float) -> float | None:
    """The nearest-rank percentile (p95 of 20 samples: the 19th smallest); None without samples."""
    if not latencies:
        return None
    ordered = sorted(latencies)
    rank = max(1, math.ceil(percentile / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _percent(value: float) -> str:
    return f"{value * 100:.1f} %"


def http_probe_verdict(
    analysis: str, cluster: str, point: str, probe: HttpProbe, samples: Sequence[ProbeSample], now: datetime
) -> GateRun:
    if not samples:
        return GateRun(analysis, cluster, point, "fail", "no samples", now)
    succeeded = sum(1 for sample in samples if 200 <= sample.status < 400)
    rate = succeeded / len(samples)
    latency = latency_percentile([sample.latency_ms for sample in samples], probe.latency_percentile)
    failures = sorted({sample.status for sample in samples if not 200 <= sample.status < 400})
    label = f"p{probe.latency_percentile:g}"
    values = f"samples={len(samples)}, success={_percent(rate)} (min {_percent(probe.min_success_rate)})"
    values += f", {label}={latency:.1f} ms" if latency is not None else ""
    if probe.max_latency_ms is not None:
        values += f" (max {probe.max_latency_ms} ms)"
    if failures:
        values += ", failed with " + ", ".join("no answer" if s == 0 else f"HTTP {s}" for s in failures)
    too_slow = probe.max_latency_ms is not None and latency is not None and latency > probe.max_latency_ms
    verdict: GateVerdict = "fail" if rate < probe.min_success_rate or too_slow else "pass"
    return GateRun(analysis, cluster, point, verdict, values, now, len(samples), rate, latency)


def condition_holds(value: float, condition: str) -> bool:
    """`value` against a success condition such as "< 0.01" (the model checked its shape); NaN never holds."""
    match = _CONDITION.match(condition)
    if match is None:
        raise ValueError(f"not a success condition: {condition!r}")
    return _OPERATORS[match.group(1)](value, float(match.group(2)))


def prometheus_verdict(
    analysis: str, cluster: str, point: str, query: PrometheusQuery, answer: PrometheusAnswer, now: datetime
) -> GateRun:
    problem = answer.error or ("the query matched no series" if answer.value is None else "")
    if problem:
        verdict: GateVerdict = "inconclusive" if query.on_error == OnGateError.INCONCLUSIVE else "fail"
        return GateRun(analysis, cluster, point, verdict, f"{problem} (onError: {query.on_error})", now)
    assert answer.value is not None
    holds = condition_holds(answer.value, query.success_condition)
    values = f"value={answer.value:g}, condition {query.success_condition.strip()}"
    if answer.series > 1:
        values += f" (first of {answer.series} series)"
    return GateRun(analysis, cluster, point, "pass" if holds else "fail", values, now, value=answer.value)


def _current(run: GateRun | None, cluster: str, point: str) -> GateRun | None:
    return run if run is not None and run.cluster == cluster and run.point == point else None


def gate_retry_at(run: GateRun | None, cluster: str, point: str) -> datetime | None:
    """When an inconclusive run of this cluster and point runs again (None: no such run)."""
    current = _current(run, cluster, point)
    if current is None or current.verdict != "inconclusive":
        return None
    return current.at + timedelta(seconds=INCONCLUSIVE_RETRY_SECONDS)


def should_run_gate(analysis: Analysis, run: GateRun | None, cluster: str, point: str, now: datetime) -> bool:
    """A measured gate runs when it has no run for this cluster and point, or its inconclusive run is due
    again; a run with a verdict stands."""
    if not is_measured(analysis) or not cluster:
        return False
    if _current(run, cluster, point) is None:
        return True
    due = gate_retry_at(run, cluster, point)
    return due is not None and now >= due


def gate_results(
    analyses: Sequence[Analysis], runs: Mapping[str, GateRun], cluster: str, point: str
) -> dict[str, AnalysisResult]:
    """The AnalysisResult of every measured gate at this point: its run's verdict, or pending (no run for
    this cluster and point yet, or only an inconclusive one)."""
    found: dict[str, AnalysisResult] = {}
    for analysis in analyses:
        if not is_measured(analysis):
            continue
        run = _current(runs.get(point), cluster, point)
        if run is None or run.analysis != analysis.name:
            found[analysis.name] = AnalysisResult(analysis.name, "pending", "not run yet")
        elif run.verdict == "inconclusive":
            found[analysis.name] = AnalysisResult(analysis.name, "pending", f"inconclusive: {run.values}")
        else:
            found[analysis.name] = AnalysisResult(analysis.name, run.verdict, run.values)
    return found
