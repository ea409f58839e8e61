"""The HTTP probe of an analysis gate against a simulated RayCluster's Serve endpoint, through its head
Service and the API server's service proxy: answers, slow answers past the timeout (no answer), and the
pacing of the samples."""

from __future__ import annotations

import time

import pytest
from kubernetes import client
from temporalio.testing import ActivityEnvironment

from activities.analysis import AnalysisActivities
from activities.registry import ActivityDependencies
from tests.activities.test_serve_drain import serving_cluster
from wire.analysis import HttpProbeRequest

pytestmark = pytest.mark.timeout(60)


async def test_the_probe_measures_the_serve_endpoint_through_the_head_service(
    deps: ActivityDependencies, core_api: client.CoreV1Api
) -> None:
    namespace, _ = await serving_cluster(deps, core_api)
    probe = AnalysisActivities(deps).probe_http
    started = time.monotonic()
    answered = await ActivityEnvironment().run(
        probe, HttpProbeRequest(namespace, "rc-head-svc", 8000, "/", samples=5, interval_seconds=0.1)
    )
    assert time.monotonic() - started >= 0.4  # 5 samples, one every 0.1 s
    assert [sample.status for sample in answered.samples] == [200] * 5
    assert all(0 < sample.latency_ms < 2000 for sample in answered.samples)
    slow = await ActivityEnvironment().run(
        probe,
        HttpProbeRequest(
            namespace, "rc-head-svc", 8000, "/?work_s=1", samples=2, interval_seconds=0.1, timeout_seconds=0.2
        ),
    )
    assert [sample.status for sample in slow.samples] == [0, 0]  # no answer within the timeout
    assert all(sample.latency_ms < 900 for sample in slow.samples)
    missing = await ActivityEnvironment().run(
        probe, HttpProbeRequest(namespace, "no-such-svc", 8000, "/", samples=1, interval_seconds=0.1)
    )
    assert missing.samples[0].status >= 400  # the API server answers for a Service that does not exist
