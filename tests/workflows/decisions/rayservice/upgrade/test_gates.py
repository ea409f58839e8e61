"""The verdicts of the measured analysis gates (decisions/rayservice/upgrade/gates.py), by table."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from activities.analysis import prometheus_answer
from models.rollout import Analysis, HttpProbe, PrometheusQuery
from wire.analysis import ProbeSample, PrometheusAnswer
from workflows.decisions.rayservice.upgrade.gates import (
    GateRun,
    condition_holds,
    gate_results,
    http_probe_verdict,
    latency_percentile,
    prometheus_verdict,
    should_run_gate,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
OK = ProbeSample(200, 10.0)


@pytest.mark.parametrize(
    ("latencies", "percentile", "expected"),
    [
        ([], 95, None),
        ([5.0], 95, 5.0),
        ([float(n) for n in range(1, 21)], 95, 19.0),  # nearest rank: the 19th of 20
        ([float(n) for n in range(1, 21)], 50, 10.0),
        ([float(n) for n in range(1, 21)], 100, 20.0),
        ([3.0, 1.0, 2.0], 1, 1.0),
    ],
)
def test_latency_percentile_is_the_nearest_rank(
    latencies: list[float], percentile: float, expected: float
) -> None:
    assert latency_percentile(latencies, percentile) == expected


@pytest.mark.parametrize(
    ("samples", "probe", "verdict", "values"),
    [
        ([OK] * 20, {}, "pass", "samples=20, success=100.0 % (min 100.0 %), p95=10.0 ms"),
        (
            [OK] * 19 + [ProbeSample(500, 1.0)],
            {},
            "fail",
            "success=95.0 % (min 100.0 %), p95=10.0 ms, failed with HTTP 500",
        ),
        ([OK] * 19 + [ProbeSample(0, 2000.0)], {"minSuccessRate": 0.95}, "pass", "failed with no answer"),
        ([OK] * 18 + [ProbeSample(0, 2000.0)] * 2, {"minSuccessRate": 0.95}, "fail", "success=90.0 %"),
        ([ProbeSample(302, 4.0)] * 4, {}, "pass", "samples=4"),  # a redirect answered
        (
            [OK] * 9 + [ProbeSample(200, 900.0)],
            {"maxLatencyMs": 500, "latencyPercentile": 90},
            "pass",
            "p90=10.0 ms (max 500 ms)",
        ),
        (
            [OK] * 8 + [ProbeSample(200, 900.0)] * 2,
            {"maxLatencyMs": 500, "latencyPercentile": 90},
            "fail",
            "p90=900.0 ms (max 500 ms)",
        ),
        ([], {}, "fail", "no samples"),
    ],
)
def test_http_probe_verdict(
    samples: list[ProbeSample], probe: dict[str, object], verdict: str, values: str
) -> None:
    run = http_probe_verdict("probe", "rc", "step 2", HttpProbe.model_validate(probe), samples, NOW)
    assert run.verdict == verdict
    assert values in run.values


@pytest.mark.parametrize(
    ("value", "condition", "holds"),
    [
        (0.005, "< 0.01", True),
        (0.01, "< 0.01", False),
        (0.01, "<= 0.01", True),
        (3.0, ">=3", True),
        (2.0, " > 2 ", False),
        (1.0, "== 1", True),
        (1.0, "!= 1", False),
        (-1.0, "> -2", True),
        (1e-4, "< 1e-3", True),
        (float("nan"), "< 1", False),
    ],
)
def test_condition_holds(value: float, condition: str, holds: bool) -> None:
    assert condition_holds(value, condition) is holds


QUERY = {"address": "http://prom:9090", "query": "q", "successCondition": "< 0.01"}


@pytest.mark.parametrize(
    ("answer", "on_error", "verdict", "values"),
    [
        (PrometheusAnswer(0.001, 1), "Fail", "pass", "value=0.001, condition < 0.01"),
        (PrometheusAnswer(0.5, 3), "Fail", "fail", "value=0.5, condition < 0.01 (first of 3 series)"),
        (PrometheusAnswer(error="Prometheus unreachable: ConnectError"), "Fail", "fail", "(onError: Fail)"),
        (
            PrometheusAnswer(error="Prometheus unreachable: ConnectError"),
            "Inconclusive",
            "inconclusive",
            "unreachable",
        ),
        (PrometheusAnswer(None, 0), "Fail", "fail", "the query matched no series"),
        (PrometheusAnswer(None, 0), "Inconclusive", "inconclusive", "matched no series"),
    ],
)
def test_prometheus_verdict(answer: PrometheusAnswer, on_error: str, verdict: str, values: str) -> None:
    query = PrometheusQuery.model_validate({**QUERY, "onError": on_error})
    run = prometheus_verdict("errors", "rc", "step 1", query, answer, NOW)
    assert (run.verdict, values in run.values) == (verdict, True)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"status": "success", "data": {"resultType": "vector", "result": []}}, PrometheusAnswer(None, 0)),
        (
            {
                "status": "success",
                "data": {"resultType": "vector", "result": [{"metric": {}, "value": [1, "0.5"]}] * 2},
            },
            PrometheusAnswer(0.5, 2),
        ),
        (
            {"status": "success", "data": {"resultType": "scalar", "result": [1, "3"]}},
            PrometheusAnswer(3.0, 1),
        ),
        (
            {"status": "error", "errorType": "bad_data", "error": "parse error"},
            PrometheusAnswer(error="bad_data: parse error"),
        ),
        (
            {"status": "success", "data": {"resultType": "matrix", "result": []}},
            PrometheusAnswer(error="the query gives a matrix, not a scalar or an instant vector"),
        ),
        ([], PrometheusAnswer(error="not a Prometheus API answer")),
    ],
)
def test_prometheus_answer(body: object, expected: PrometheusAnswer) -> None:
    assert prometheus_answer(body) == expected


HTTP = Analysis.model_validate({"name": "probe", "http": {}})
SERVE = Analysis.model_validate({"name": "serve", "serveStatus": {}})


def _run(verdict: str, cluster: str = "rc", point: str = "step 2", ago: int = 0) -> GateRun:
    return GateRun("probe", cluster, point, verdict, "", NOW - timedelta(seconds=ago))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("analysis", "run", "cluster", "point", "runs"),
    [
        (HTTP, None, "rc", "step 2", True),
        (HTTP, _run("pass"), "rc", "step 2", False),  # a verdict stands
        (HTTP, _run("fail"), "rc", "step 2", False),
        (HTTP, _run("pass"), "other", "step 2", True),  # a new pending cluster runs it anew
        (HTTP, _run("pass", point="step 4"), "rc", "step 2", True),
        (HTTP, _run("inconclusive", ago=10), "rc", "step 2", False),
        (HTTP, _run("inconclusive", ago=30), "rc", "step 2", True),
        (SERVE, None, "rc", "step 2", False),  # judged from the last observation, no activity
        (HTTP, None, "", "step 2", False),
    ],
)
def test_should_run_gate(
    analysis: Analysis, run: GateRun | None, cluster: str, point: str, runs: bool
) -> None:
    assert should_run_gate(analysis, run, cluster, point, NOW) is runs


def test_gate_results_are_pending_until_run_at_this_point() -> None:
    runs = {"step 2": _run("fail")}
    assert gate_results([HTTP, SERVE], runs, "rc", "step 2")["probe"].verdict == "fail"
    assert gate_results([HTTP, SERVE], runs, "rc", "step 3")["probe"].verdict == "pending"
    assert (
        gate_results([HTTP, SERVE], {"step 2": _run("inconclusive")}, "rc", "step 2")["probe"].verdict
        == "pending"
    )
    assert "serve" not in gate_results([HTTP, SERVE], runs, "rc", "step 2")
