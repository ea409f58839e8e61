"""The worker's endpoint exports every metric of `wire.metrics` under the name dashboards use, and the
Grafana dashboard and the alert rules of deploy/monitoring query only exported metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from raypilot.metrics import phase_counts
from sandbox.realkube.controlplane import free_port
from wire.metrics import EXPORTED, SPECS, MetricPoint, histogram_buckets, prometheus_series
from workflows.kit.metrics import record_points

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
EXPORTED_SERIES = {series for spec in EXPORTED for series in prometheus_series(spec)}

# PromQL words that are not metric names.
_PROMQL_WORDS = {
    "and",
    "or",
    "unless",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
}
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHERS = re.compile(r"\{[^}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPINGS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.])[a-zA-Z_:][a-zA-Z0-9_:]*")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, groupings, labels and keywords removed)."""
    text = _GROUPINGS.sub(" ", _RANGES.sub(" ", _MATCHERS.sub(" ", _STRINGS.sub(" ", expr))))
    names = set()
    for found in _IDENTIFIER.finditer(text):
        is_function = text[found.end() :].lstrip().startswith("(")
        if not is_function and found.group() not in _PROMQL_WORDS:
            names.add(found.group())
    return names


def _dashboard_queries() -> list[str]:
    dashboard: dict[str, Any] = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def _alert_queries() -> list[str]:
    rules = yaml.safe_load((MONITORING / "prometheus-alerts.yaml").read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def test_the_promql_reader_finds_metric_names_and_nothing_else() -> None:
    expr = 'histogram_quantile(0.9, sum by (le, x) (rate(a_bucket{y="b c"}[5m]))) > 1 and on (x) max(b) == 0'
    assert metric_names(expr) == {"a_bucket", "b"}


@pytest.mark.parametrize("source", ["dashboard", "alerts"])
def test_every_query_names_only_metrics_the_worker_exports(source: str) -> None:
    queries = _dashboard_queries() if source == "dashboard" else _alert_queries()
    assert queries
    for query in queries:
        names = metric_names(query)
        assert names, query
        assert names <= EXPORTED_SERIES, f"{query}: {names - EXPORTED_SERIES} not exported"


def test_the_dashboard_shows_every_metric_and_the_alerts_cover_failures_stuck_upgrades_and_deletion_lag() -> (
    None
):
    shown = {name for query in _dashboard_queries() for name in metric_names(query)}
    assert {spec.name for spec in EXPORTED} <= {series.removesuffix("_bucket") for series in shown}
    rules = yaml.safe_load((MONITORING / "prometheus-alerts.yaml").read_text())
    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    assert {"RayJobsFailed", "RayServiceUpgradeStuck", "RayJobDeletionLate"} <= alerts


def _sample_point(name: str) -> MetricPoint:
    return MetricPoint(name, 2.0, {label: "x" for label in SPECS[name].labels})


def test_the_endpoint_exports_every_metric_under_its_name() -> None:
    """One value of each metric recorded through the SDK's meter, as workflows, activities and the phase
    collector record them, then the endpoint scraped as Prometheus would."""
    address = f"127.0.0.1:{free_port()}"
    config = PrometheusConfig(bind_address=address, histogram_bucket_overrides=histogram_buckets())
    runtime = Runtime(telemetry=TelemetryConfig(metrics=config))
    record_points(runtime.metric_meter, [_sample_point(spec.name) for spec in EXPORTED])
    scraped = httpx.get(f"http://{address}/metrics", timeout=10).text
    series = {line.split("{")[0].split(" ")[0] for line in scraped.splitlines() if not line.startswith("#")}
    assert series >= EXPORTED_SERIES, EXPORTED_SERIES - series
    # The buckets of wire.metrics, not the SDK's defaults (milliseconds).
    lag_buckets = [
        line
        for line in scraped.splitlines()
        if line.startswith("raypilot_rayjob_deletion_lag_seconds_bucket")
    ]
    assert any('le="0.5"' in line for line in lag_buckets), lag_buckets
    # The state gauges are those the collector sets.
    assert {count.metric for count in phase_counts()} <= {spec.name for spec in EXPORTED}
