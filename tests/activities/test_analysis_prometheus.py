"""The Prometheus provider of the analysis gates against a real Prometheus server (Debian's `prometheus`
package, installed by .ci/run): the test serves a metrics endpoint, starts its own Prometheus scraping it
(own port, own data directory), waits until a scrape happened, then runs a passing and a failing gate, a
refused query and an unreachable Prometheus through the activity and the gate's verdict."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from temporalio.testing import ActivityEnvironment

from activities.analysis import AnalysisActivities
from activities.registry import ActivityDependencies
from models.rollout import PrometheusQuery
from sandbox.realkube.controlplane import free_port
from tests.local_http import local_http
from wire.analysis import PrometheusAnswer, PrometheusRequest
from workflows.decisions.rayservice.upgrade.gates import prometheus_verdict

PROMETHEUS = shutil.which("prometheus")
pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(
        PROMETHEUS is None,
        reason="no prometheus binary (Debian's `prometheus` package; .ci/run installs it when apt answers)",
    ),
]

# 5 of 1000 requests failed: an error ratio of 0.005.
METRICS = """\
# TYPE serve_requests_total counter
serve_requests_total{code="200"} 995
serve_requests_total{code="500"} 5
"""
ERROR_RATIO = 'sum(serve_requests_total{code=~"5.."}) / sum(serve_requests_total)'


async def metrics(_: web.Request) -> web.Response:
    return web.Response(text=METRICS, content_type="text/plain")


@pytest.fixture
async def prometheus(tmp_path: Path) -> AsyncIterator[str]:
    """A Prometheus scraping the test's metrics endpoint every second; its address once it has scraped."""
    async with local_http("/metrics", metrics) as target, running_prometheus(tmp_path, target) as address:
        yield address


@contextlib.asynccontextmanager
async def running_prometheus(tmp_path: Path, target: str) -> AsyncIterator[str]:
    """A Prometheus scraping `target` every second, until the block ends; its URL once it has scraped."""
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"scrape_configs: [{{job_name: serve, static_configs: [{{targets: ['{target}']}}]}}]\n"
    )
    address = f"127.0.0.1:{free_port()}"
    assert PROMETHEUS is not None
    log = (tmp_path / "prometheus.log").open("w")
    process = await asyncio.create_subprocess_exec(
        PROMETHEUS,
        f"--config.file={config}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address={address}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=log,
    )
    try:
        async with httpx.AsyncClient() as http, asyncio.timeout(60):
            while True:  # until the first scrape is in: `up` of the job is 1
                try:
                    answer = await http.get(
                        f"http://{address}/api/v1/query", params={"query": 'up{job="serve"}'}
                    )
                    result = answer.json()["data"]["result"]
                    if result and result[0]["value"][1] == "1":
                        break
                except (httpx.HTTPError, ValueError, KeyError):
                    pass
                await asyncio.sleep(0.2)
        yield f"http://{address}"
    finally:
        process.terminate()  # by its PID, this process only
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()
        log.close()


def verdict(condition: str, answer: PrometheusAnswer, on_error: str = "Fail") -> tuple[str, str]:
    query = PrometheusQuery.model_validate(
        {
            "address": "http://prometheus:9090",
            "query": ERROR_RATIO,
            "successCondition": condition,
            "onError": on_error,
        }
    )
    run = prometheus_verdict("errors", "rc", "step 2", query, answer, datetime.now(UTC))
    return run.verdict, run.values


async def test_gates_against_a_real_prometheus(prometheus: str) -> None:
    dependencies = ActivityDependencies.from_env({})
    try:
        query = AnalysisActivities(dependencies).query_prometheus
        answer = await ActivityEnvironment().run(query, PrometheusRequest(prometheus, ERROR_RATIO))
        assert answer == PrometheusAnswer(value=0.005, series=1)
        assert verdict("< 0.01", answer) == ("pass", "value=0.005, condition < 0.01")
        assert verdict("< 0.001", answer) == ("fail", "value=0.005, condition < 0.001")
        refused = await ActivityEnvironment().run(query, PrometheusRequest(prometheus, "sum(("))
        assert refused.value is None
        assert refused.error.startswith("bad_data: ")
        nothing = await ActivityEnvironment().run(query, PrometheusRequest(prometheus, "no_such_metric"))
        assert nothing == PrometheusAnswer(value=None, series=0)
        assert verdict("< 0.01", nothing, "Inconclusive")[0] == "inconclusive"
        closed = f"http://127.0.0.1:{free_port()}"
        unreachable = await ActivityEnvironment().run(query, PrometheusRequest(closed, ERROR_RATIO, 2.0))
        assert unreachable.error.startswith("Prometheus unreachable: ConnectError")
        assert verdict("< 0.01", unreachable) == ("fail", f"{unreachable.error} (onError: Fail)")
    finally:
        await dependencies.aclose()
