"""Stand-ins for programs of images that are not Ray (sandbox/images/): KubeRay's light-weight submitter."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import httpx
import pytest

from sandbox.images import image_repository, stand_in_argv
from sandbox.images.kuberay_submitter import submission_request
from sandbox.ray.simulated import SimulatedDashboard
from sandbox.ray.simulated_timings import SimulationTimings


@pytest.mark.parametrize(
    ("image", "repository"),
    [
        ("quay.io/kuberay/submitter:v1.5.1", "quay.io/kuberay/submitter"),
        ("quay.io/kuberay/submitter", "quay.io/kuberay/submitter"),
        ("localhost:5000/kuberay/submitter:dev", "localhost:5000/kuberay/submitter"),
        ("quay.io/kuberay/submitter@sha256:abc", "quay.io/kuberay/submitter"),
    ],
)
def test_image_repository(image: str, repository: str) -> None:
    assert image_repository(image) == repository


@pytest.mark.parametrize(
    ("container", "argv", "expected"),
    [
        (
            {"image": "quay.io/kuberay/submitter:v1.5.1"},
            ["/submitter", "--", "python", "x.py"],
            [sys.executable, "-m", "sandbox.images.kuberay_submitter", "--", "python", "x.py"],
        ),
        ({"image": "rayproject/ray:2.52.0"}, ["/submitter", "x"], ["/submitter", "x"]),  # not that image
        ({"image": "quay.io/kuberay/submitter:v1"}, ["/bin/sh", "-c", "true"], ["/bin/sh", "-c", "true"]),
        ({"image": "quay.io/kuberay/submitter:v1"}, [], []),
    ],
)
def test_stand_in_argv(container: dict[str, Any], argv: list[str], expected: list[str]) -> None:
    assert stand_in_argv(container, argv) == expected


def test_submission_request_reads_the_flags_and_the_entrypoint_after_them() -> None:
    request = submission_request(
        [
            "--runtime-env-json",
            '{"pip": ["requests"]}',
            "--entrypoint-num-cpus",
            "1",
            "--",
            "python",
            "run.py",
        ],
        "job-1",
    )
    assert request == {
        "entrypoint": "python run.py",
        "submission_id": "job-1",
        "entrypoint_num_cpus": 1.0,
        "entrypoint_num_gpus": 0.0,
        "runtime_env": {"pip": ["requests"]},
    }


async def run_submitter(dashboard_url: str, submission_id: str, *args: str) -> tuple[int, str]:
    address = dashboard_url.removeprefix("http://")
    env = {"RAY_DASHBOARD_ADDRESS": address, "RAY_JOB_SUBMISSION_ID": submission_id}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sandbox.images.kuberay_submitter", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    return process.returncode or 0, output.decode()


async def test_the_submitter_submits_follows_the_logs_and_exits_when_the_job_ends() -> None:
    head = SimulatedDashboard("stand-in", {}, {}, timings=SimulationTimings.fast())
    await head.start()
    try:
        code, output = await run_submitter(head.dashboard_url, "lw-1", "--", "echo", "hello from the job")
        assert code == 0, output
        assert "SUCC -- Job 'lw-1' submitted successfully" in output
        assert "hello from the job" in output
        async with httpx.AsyncClient(base_url=head.dashboard_url) as client:
            assert (await client.get("/api/jobs/lw-1")).json()["status"] == "SUCCEEDED"
        # Run again (a retried submitter pod): the id is taken, so it only follows the same job.
        again, output = await run_submitter(head.dashboard_url, "lw-1", "--", "echo", "hello from the job")
        assert again == 0, output
        assert "has already been submitted, tailing logs" in output
    finally:
        await head.stop()


async def test_the_submitter_fails_without_its_environment() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "sandbox.images.kuberay_submitter", "--", "true",
        env={}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await process.communicate()
    assert process.returncode == 1
    assert b"missing RAY_DASHBOARD_ADDRESS" in output
