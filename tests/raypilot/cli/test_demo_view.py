"""What the demo prints and decides without I/O: live lines, summaries, the Gateway URL, its manifests, and
when a step counts as succeeded."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from models.features import FeatureGates
from models.manifest import parse_manifest
from models.validation import validate
from raypilot.cli.demo import job_succeeded, upgrade_succeeded
from raypilot.cli.demo_rayjob import demo_job_manifest
from raypilot.cli.demo_rayservice import demo_service_manifest, gateway_url
from raypilot.cli.demo_support import DemoPace
from raypilot.cli.demo_view import (
    JobReport,
    UpgradeReport,
    job_line,
    job_summary,
    migration_intervals,
    service_line,
    upgrade_summary,
)
from raypilot.cli.timeline import Step
from raypilot.load import FAILED

JOB = JobReport(
    name="demo-job",
    phase="Complete",
    job_status="SUCCEEDED",
    job_id="demo-job-abcde",
    cluster="demo-job-xyz12",
    run_s=4.0,
    cluster_deleted_after_end_s=10.4,
    ttl_s=10,
)
"""A RayJob the demo ran to success, its cluster deleted after the TTL; tests change it with `replace`."""

UPGRADE = UpgradeReport(
    old_cluster="svc-old",
    new_cluster="svc-new",
    old_version="v1",
    new_version="v2",
    counts=Counter({"v1": 600, "v2": 390, FAILED: 10}),
    failure_details=Counter({"HTTP 503": 10}),
    steps=[Step(2.5, "svc-new", "capacity", 0, 50), Step(3.0, "svc-old", "traffic", 100, 75)],
    migrated_times=[datetime(2026, 1, 1, 0, 0, s, tzinfo=UTC) for s in (1, 7, 12)],
    total_s=31.25,
    strategy="NewClusterWithIncrementalUpgrade",
    timeline_png=Path("demo/upgrade-timeline.png"),
)
"""An incremental upgrade the demo watched, 10 of its requests failed; tests change it with `replace`."""


def test_job_line_shows_phase_job_and_cluster() -> None:
    status = {
        "jobDeploymentStatus": "Running",
        "jobStatus": "RUNNING",
        "jobId": "demo-job-abcde",
        "rayClusterName": "demo-job-xyz12",
        "rayClusterStatus": {"state": "ready"},
    }
    line = " ".join(job_line(12.34, status).split())
    assert line == "12.3 s Running job RUNNING id demo-job-abcde cluster demo-job-xyz12 (ready)"
    assert job_line(0.0, {}).split()[2:] == ["New", "job", "-", "id", "-", "cluster", "-"]


def test_service_line_shows_both_sides_and_the_load() -> None:
    status = {
        "activeServiceStatus": {
            "rayClusterName": "svc-old",
            "trafficRoutedPercent": 75,
            "targetCapacity": 100,
        },
        "pendingServiceStatus": {
            "rayClusterName": "svc-new",
            "trafficRoutedPercent": 25,
            "targetCapacity": 50,
        },
    }
    line = service_line(
        5.0, status, Counter({"v1": 30, "v2": 10, FAILED: 2}), Counter({"v1": 3, "v2": 1}), "v2"
    )
    assert "active svc-old traffic  75% capacity 100%" in line
    assert "pending svc-new traffic  25% capacity  50%" in line
    assert "ok 40 failed 2" in line
    assert line.endswith("v2 share  25.0% (last 2 s)")
    idle = service_line(
        1.0, {"activeServiceStatus": {"rayClusterName": "svc-old"}}, Counter(), Counter(), "v2"
    )
    assert "active svc-old traffic 100% capacity 100% | pending -" in idle


def test_job_summary_says_when_the_cluster_went() -> None:
    lines = job_summary(JOB)
    assert lines[0] == "RayJob demo-job: Complete, job SUCCEEDED (id demo-job-abcde) on demo-job-xyz12"
    assert "RayCluster deleted 10.4 s after endTime" in lines[2]
    kept = job_summary(replace(JOB, cluster_deleted_after_end_s=None, run_s=None))
    assert kept[1] == "  RayCluster demo-job-xyz12 NOT deleted (DeleteCluster rule, ttl 10 s)"


def test_upgrade_summary_has_requests_steps_intervals_and_total() -> None:
    text = "\n".join(upgrade_summary(UPGRADE))
    assert "requests sent 1000, failed 10 (1.00 %); v2 answered 39.4 % of them" in text
    lines = text.splitlines()
    assert f"       2.5 s  {'v2 svc-new':<28} capacity   0% ->  50%" in lines
    assert f"       3.0 s  {'v1 svc-old':<28} traffic  100% ->  75%" in lines
    assert "failed 10 x: HTTP 503" in text
    assert "traffic migrations (lastTrafficMigratedTime): 3, first at 00:00:01, then every 6, 5 s" in text
    assert "total upgrade time 31.2 s" in text
    assert (
        "of which 2.5 s until the new cluster served (its first step), 0.5 s of traffic and capacity steps"
        in text
    )
    assert "timeline picture: demo/upgrade-timeline.png" in text


def test_upgrade_summary_of_an_upgrade_that_never_finished() -> None:
    text = "\n".join(
        upgrade_summary(replace(UPGRADE, total_s=None, steps=[], migrated_times=[], timeline_png=None))
    )
    assert "upgrade did NOT complete" in text
    assert "none seen" in text
    assert "timeline picture" not in text


def test_migration_intervals() -> None:
    times = [datetime(2026, 1, 1, 0, 0, s, tzinfo=UTC) for s in (0, 5, 11)]
    assert migration_intervals(times) == [5.0, 6.0]
    assert migration_intervals(times[:1]) == []


def test_success_needs_a_deleted_cluster_and_a_lossless_upgrade() -> None:
    assert job_succeeded(JOB)
    assert not job_succeeded(replace(JOB, cluster_deleted_after_end_s=None))
    assert not job_succeeded(replace(JOB, job_status="FAILED", phase="Failed"))
    assert upgrade_succeeded(replace(UPGRADE, counts=Counter({"v1": 5, "v2": 5})))
    assert not upgrade_succeeded(UPGRADE)  # 10 failed requests
    assert not upgrade_succeeded(replace(UPGRADE, counts=Counter({"v2": 5}), total_s=None))


def programmed(message: str) -> dict[str, Any]:
    return {
        "spec": {"listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
        "status": {
            "addresses": [{"type": "IPAddress", "value": "127.0.2.7"}],
            "conditions": [{"type": "Programmed", "status": "True", "message": message}],
        },
    }


@pytest.mark.parametrize(
    ("gateway", "url"),
    [
        (programmed("listening on 127.0.2.7:80"), "http://127.0.2.7:80/"),
        (programmed("listening on 127.0.2.7:41234"), "http://127.0.2.7:41234/"),  # unprivileged sandbox
        (programmed(""), "http://127.0.2.7:80/"),  # another implementation: address and listener port
        ({"spec": {}, "status": {"conditions": [{"type": "Programmed", "status": "False"}]}}, None),
        (None, None),
    ],
)
def test_gateway_url(gateway: dict[str, Any] | None, url: str | None) -> None:
    assert gateway_url(gateway) == url


def test_demo_manifests_are_valid_for_kuberay() -> None:
    pace = DemoPace()
    job = demo_job_manifest("default", pace.delete_cluster_ttl_s)
    assert validate(parse_manifest(job), FeatureGates()) is None
    rules = job["spec"]["deletionStrategy"]["deletionRules"]
    assert {rule["policy"] for rule in rules} == {"DeleteCluster"}
    assert {rule["condition"]["ttlSeconds"] for rule in rules} == {10}
    assert job["spec"]["submissionMode"] == "K8sJobMode"
    for version in ("v1", "v2"):
        service = demo_service_manifest("default", version, pace)
        assert validate(parse_manifest(service), FeatureGates()) is None
        head = service["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]
        assert [e["value"] for e in head["env"] if e["name"] == "APP_VERSION"] == [version]
        assert service["spec"]["upgradeStrategy"]["type"] == "NewClusterWithIncrementalUpgrade"
