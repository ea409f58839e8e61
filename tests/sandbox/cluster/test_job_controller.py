"""The Job controller on an in-memory Store (no HTTP): processes, pods, conditions, back-off, deletion."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.controllers.job import JobController
from sandbox.controllers.job_pods import LOG_PATH_ANNOTATION, backoff_delay, rewrite_service_hosts
from sandbox.store import Store
from sandbox.testing import wait_until


@pytest.fixture
async def store_and_jobs(tmp_path: Path) -> AsyncIterator[tuple[Store, JobController]]:
    store = Store()
    controller = JobController(store, tmp_path, backoff_base_s=0.05, backoff_cap_s=0.2, kill_grace_s=1.0)
    await controller.start()
    yield store, controller
    await controller.stop()
    store.close()


def job_manifest(
    name: str, script: str, *, backoff_limit: int = 6, env: list[Any] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"labels": {"app": "submitter"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "ray-job-submitter",
                            "command": ["/bin/bash", "-ce", "--"],
                            "args": [script],
                            "env": env or [],
                        }
                    ],
                },
            },
        },
    }


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond["type"] == kind and cond["status"] == "True":
            return dict(cond)
    return None


def job_pods(store: Store, name: str) -> list[dict[str, Any]]:
    return store.list("v1", "Pod", "default", label_selector=f"job-name={name}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("raycluster-head-svc.default.svc.cluster.local:8265", "127.0.1.9:8265"),
        ("http://raycluster-head-svc.default.svc:8265/api", "http://127.0.1.9:8265/api"),
        ("--address http://other.ns2.svc.cluster.local:8265", "--address http://127.0.1.20:8265"),
        ("unknown.default.svc.cluster.local:1", "unknown.default.svc.cluster.local:1"),
        (
            "raycluster-head-svc.default.svc.cluster.localdomain",
            "raycluster-head-svc.default.svc.cluster.localdomain",
        ),
        ("plain text without names", "plain text without names"),
    ],
)
def test_rewrite_service_hosts(text: str, expected: str) -> None:
    known = {("default", "raycluster-head-svc"): "127.0.1.9", ("ns2", "other"): "127.0.1.20"}
    assert rewrite_service_hosts(text, lambda ns, name: known.get((ns, name))) == expected


@pytest.mark.parametrize(("failures", "expected"), [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (10, 6.0)])
def test_backoff_delay_doubles_up_to_the_cap(failures: int, expected: float) -> None:
    assert backoff_delay(failures, 1.0, 6.0) == expected


async def test_successful_job_completes_with_env_venv_path_and_service_dns(
    store_and_jobs: tuple[Store, JobController],
) -> None:
    store, _ = store_and_jobs
    service = store.create(
        "v1", "Service", {"metadata": {"name": "c-head-svc"}, "spec": {"ports": [{"port": 8265}]}}
    )
    store.create("v1", "Secret", {"metadata": {"name": "s"}, "data": {"token": "dG9r"}})
    env = [
        {"name": "RAY_DASHBOARD_ADDRESS", "value": "c-head-svc.default.svc.cluster.local:8265"},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token"}}},
    ]
    script = 'echo "addr=$RAY_DASHBOARD_ADDRESS token=$TOKEN"; python -c "import sys; print(sys.executable)"'
    store.create("batch/v1", "Job", job_manifest("ok", script, env=env))

    job = await wait_until(
        lambda: (
            condition(store.get("batch/v1", "Job", "default", "ok"), "Complete")
            and store.get("batch/v1", "Job", "default", "ok")
        ),
        what="Job Complete",
    )
    status = job["status"]
    assert status["succeeded"] == 1
    assert status.get("failed", 0) == 0
    assert status["startTime"]
    assert status["completionTime"]
    assert condition(job, "SuccessCriteriaMet") is not None
    assert condition(job, "Complete")["reason"] == "CompletionsReached"  # type: ignore[index]
    [pod] = job_pods(store, "ok")
    assert pod["metadata"]["name"].startswith("ok-")
    assert len(pod["metadata"]["name"]) == len("ok-") + 5
    assert pod["metadata"]["labels"]["controller-uid"] == job["metadata"]["uid"]
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "ok"
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert pod["status"]["phase"] == "Succeeded"
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    log_text = await asyncio.to_thread(Path(pod["metadata"]["annotations"][LOG_PATH_ANNOTATION]).read_text)
    assert f"addr={service['spec']['clusterIP']}:8265 token=tok" in log_text
    assert str(Path(sys.executable).parent) in log_text


async def test_failing_job_honours_backoff_limit(store_and_jobs: tuple[Store, JobController]) -> None:
    store, _ = store_and_jobs
    store.create("batch/v1", "Job", job_manifest("bad", "echo failing; exit 3", backoff_limit=1))

    job = await wait_until(
        lambda: (
            condition(store.get("batch/v1", "Job", "default", "bad"), "Failed")
            and store.get("batch/v1", "Job", "default", "bad")
        ),
        what="Job Failed",
    )
    assert job["status"]["failed"] == 2
    assert job["status"].get("succeeded", 0) == 0
    failed = condition(job, "Failed")
    assert failed is not None
    assert failed["reason"] == "BackoffLimitExceeded"
    assert failed["lastTransitionTime"]
    assert condition(job, "FailureTarget") is not None
    pods = job_pods(store, "bad")
    assert len(pods) == 2
    for pod in pods:
        assert pod["status"]["phase"] == "Failed"
        assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


async def test_deleting_the_job_kills_its_process(store_and_jobs: tuple[Store, JobController]) -> None:
    store, controller = store_and_jobs
    store.create("batch/v1", "Job", job_manifest("long", "sleep 60"))
    [pid] = await wait_until(lambda: controller.pids, what="process started")
    running = await wait_until(
        lambda: [p for p in job_pods(store, "long") if p["status"]["phase"] == "Running"]
    )
    assert running[0]["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    assert store.get("batch/v1", "Job", "default", "long")["status"]["active"] == 1

    store.delete("batch/v1", "Job", "default", "long", "Foreground")

    def process_gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    await wait_until(process_gone, what="submitter process killed")
    await wait_until(lambda: not controller.pids and not job_pods(store, "long"))


async def test_deleting_a_running_pod_counts_a_failure_and_retries(
    store_and_jobs: tuple[Store, JobController],
) -> None:
    store, controller = store_and_jobs
    store.create("batch/v1", "Job", job_manifest("retry", "sleep 60", backoff_limit=3))
    await wait_until(lambda: controller.pids)
    [first] = job_pods(store, "retry")
    store.delete("v1", "Pod", "default", first["metadata"]["name"])

    await wait_until(lambda: store.get("batch/v1", "Job", "default", "retry")["status"].get("failed") == 1)
    second = await wait_until(
        lambda: [p for p in job_pods(store, "retry") if p["status"]["phase"] == "Running"]
    )
    assert second[0]["metadata"]["name"] != first["metadata"]["name"]
    store.delete("batch/v1", "Job", "default", "retry")
    await wait_until(lambda: not controller.pids)


async def test_active_deadline_fails_the_job_and_kills_the_process(
    store_and_jobs: tuple[Store, JobController],
) -> None:
    store, controller = store_and_jobs
    manifest = job_manifest("late", "sleep 60")
    manifest["spec"]["activeDeadlineSeconds"] = 1
    store.create("batch/v1", "Job", manifest)
    job = await wait_until(
        lambda: (
            condition(store.get("batch/v1", "Job", "default", "late"), "Failed")
            and store.get("batch/v1", "Job", "default", "late")
        ),
        within=15,
        what="deadline exceeded",
    )
    assert condition(job, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    await wait_until(lambda: not controller.pids, what="process killed")


async def test_suspend_stops_without_counting_and_resume_runs_again(
    store_and_jobs: tuple[Store, JobController],
) -> None:
    store, controller = store_and_jobs
    store.create("batch/v1", "Job", job_manifest("pause", "sleep 60"))
    await wait_until(lambda: controller.pids)
    job = store.get("batch/v1", "Job", "default", "pause")
    job["spec"]["suspend"] = True
    store.update("batch/v1", "Job", job)
    suspended = await wait_until(
        lambda: (
            condition(store.get("batch/v1", "Job", "default", "pause"), "Suspended")
            and store.get("batch/v1", "Job", "default", "pause")
        ),
        what="Job suspended",
    )
    assert suspended["status"].get("failed", 0) == 0
    assert suspended["status"]["active"] == 0
    await wait_until(lambda: not controller.pids and not job_pods(store, "pause"))
    job = store.get("batch/v1", "Job", "default", "pause")
    job["spec"]["suspend"] = False
    store.update("batch/v1", "Job", job)
    await wait_until(lambda: controller.pids, what="running again after resume")
    store.delete("batch/v1", "Job", "default", "pause")
    await wait_until(lambda: not controller.pids)


async def test_ttl_after_finished_deletes_the_job(store_and_jobs: tuple[Store, JobController]) -> None:
    store, _ = store_and_jobs
    manifest = job_manifest("short-lived", "true")
    manifest["spec"]["ttlSecondsAfterFinished"] = 0
    store.create("batch/v1", "Job", manifest)
    await wait_until(
        lambda: store.try_get("batch/v1", "Job", "default", "short-lived") is None, what="Job gone"
    )
